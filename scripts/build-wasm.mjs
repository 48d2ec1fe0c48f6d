// Assembles src/db/memory/wasm/rank.wat into rank.wasm (committed, so installing and deploying need
// no build step). Run after editing the .wat: `npm run build:wasm`; `--check` fails when the
// committed binary is not what the source assembles to (CI runs it).
import { readFileSync, writeFileSync } from "node:fs";
import wabtModule from "wabt";

const source = "src/db/memory/wasm/rank.wat";
const target = "src/db/memory/wasm/rank.wasm";
const wabt = await wabtModule();
const parsed = wabt.parseWat(source, readFileSync(source, "utf8"));
parsed.validate();
const { buffer } = parsed.toBinary({ log: false, write_debug_names: false });
parsed.destroy();
if (process.argv.includes("--check")) {
  const committed = readFileSync(target);
  if (!committed.equals(Buffer.from(buffer))) {
    console.error(`${target} is not what ${source} assembles to: run npm run build:wasm`);
    process.exit(1);
  }
  console.log(`${target} matches ${source}`);
} else {
  writeFileSync(target, buffer);
  console.log(`${target}: ${buffer.length} bytes`);
}
