// Every worker entry a benchmark starts (the `entry:` its script hands bench/worker-harness.ts)
// builds the way `wrangler deploy` builds the product: wrangler refuses a bundle that leaves out a
// Durable Object class wrangler.toml binds ("Your Worker depends on the following Durable
// Objects, which are not exported in your entrypoint file"), which is how a class added to the
// product once broke bench:floor, bench:compare and bench -- --d1-ms on a fresh clone. The
// entries are read from the bench scripts, so a new one is held here without being listed.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");

/** The entries the bench scripts start (`{ entry: "bench/…" }`), in bench/ and its folders. */
function benchEntries(dir = join(ROOT, "bench")): string[] {
  const entries = new Set<string>();
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, item.name);
    if (item.isDirectory()) for (const entry of benchEntries(path)) entries.add(entry);
    if (!item.name.endsWith(".ts")) continue;
    const text = readFileSync(path, "utf8");
    for (const match of text.matchAll(/entry: "(bench\/[^"]+\.ts)"/g)) entries.add(match[1]!);
  }
  return [...entries].sort();
}

/** The Durable Object classes wrangler.toml binds. */
function boundClasses(): string[] {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  return [...toml.matchAll(/^class_name = "(\w+)"/gm)].map((match) => match[1]!);
}

describe("the benchmarks' worker entries", () => {
  const entries = benchEntries();

  it("are found in the bench scripts", () => {
    expect(entries.length).toBeGreaterThanOrEqual(3);
    expect(boundClasses()).toContain("DiscordRestLimiter");
  });

  for (const entry of entries)
    it(`${entry} exports every Durable Object class wrangler.toml binds`, () => {
      const source = readFileSync(join(ROOT, entry), "utf8");
      for (const name of boundClasses()) expect(source, `${entry}: ${name}`).toContain(name);
      // And wrangler, which decides, builds it.
      const outdir = mkdtempSync(join(tmpdir(), "bench-entry-"));
      try {
        execFileSync(
          process.execPath,
          [WRANGLER, "deploy", entry, "--dry-run", "--outdir", outdir],
          {
            cwd: ROOT,
            stdio: "pipe",
          },
        );
      } catch (error) {
        const output = error instanceof Error && "stderr" in error ? String(error.stderr) : "";
        expect.fail(`wrangler could not build ${entry}:\n${output.slice(0, 2_000)}`);
      } finally {
        rmSync(outdir, { recursive: true, force: true });
      }
    });
});
