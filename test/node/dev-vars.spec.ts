// `npm run dev`'s first step (scripts/dev-vars.ts) writes .dev.vars so a local run works offline:
// Workers AI and Vectorize, which answer only remotely, are switched off, so a VECTORS binding that
// `npm run deploy -- --vectorize` added to wrangler.toml leaves local development working; values
// the developer set are never overwritten.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const SCRIPT = resolve(import.meta.dirname, "../../scripts/dev-vars.ts");

async function devVars(existing?: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "dev-vars-"));
  if (existing !== undefined) writeFileSync(join(dir, ".dev.vars"), existing);
  await run(process.execPath, [SCRIPT], { cwd: dir });
  return readFileSync(join(dir, ".dev.vars"), "utf8");
}

describe("npm run dev's .dev.vars", () => {
  it("switches off what answers only remotely, Vectorize included", async () => {
    const written = await devVars();
    expect(written).toMatch(/^WORKERS_AI=false$/m);
    expect(written).toMatch(/^VECTORIZE=false$/m);
    expect(written).toMatch(/^ADMIN_TOKEN=[0-9a-f]{48}$/m);
  });

  it("adds VECTORIZE=false to an older .dev.vars and keeps every value set there", async () => {
    const older = "ADMIN_TOKEN=mine\nSECRETS_KEY=also-mine\nWORKERS_AI=true\n";
    const written = await devVars(older);
    expect(written).toMatch(/^VECTORIZE=false$/m);
    expect(written).toMatch(/^ADMIN_TOKEN=mine$/m);
    expect(written).toMatch(/^WORKERS_AI=true$/m);
    expect(await devVars("VECTORIZE=true\n")).not.toMatch(/^VECTORIZE=false$/m);
  });
});
