// The place matrix is built from the code (issue 53): every call in src/ of a function that hands
// text to a model or to memory (test/security/place-paths.ts, SINKS) is a row of the matrix, and
// every row is such a call, so a new path to a model that nobody put in the matrix fails here.
// Each place path's cells name the test that holds the rule (checked to exist) or why it does not
// apply, and each place path's file goes through the one admission (src/clients/chat/).
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ENTRY_PATHS, PLACE_RULES, SINKS } from "../security/place-paths.ts";

const ROOT = join(import.meta.dirname, "../..");

/** Where the sinks are defined or merely forwarded, not entry paths of their own. */
const DEFINITIONS = new Set([
  "src/rpc.ts",
  "src/objects/conversation/room-client.ts",
  "src/objects/conversation/agent-room.ts",
  "src/objects/conversation/journal-edits.ts",
  "src/objects/conversation/room-parts.ts",
  "src/objects/tasks/task-client.ts",
  "src/db/memory/memory-repo.ts",
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Calls of a sink, by file: `name(` not in a comment, not a declaration. */
function callSites(): Set<string> {
  const found = new Set<string>();
  const call = new RegExp(`\\b(${SINKS.join("|")})\\(`, "g");
  for (const path of sourceFiles(join(ROOT, "src"))) {
    const file = relative(ROOT, path);
    if (DEFINITIONS.has(file)) continue;
    for (const line of readFileSync(path, "utf8").split("\n")) {
      const code = line.trim();
      if (code.startsWith("//") || code.startsWith("*")) continue;
      if (/^(export\s+)?(async\s+)?function\b|^(async\s+)?\w+\(.*\)\s*:\s*Promise</.test(code))
        continue;
      for (const match of code.matchAll(call)) found.add(`${file} ${match[1]}`);
    }
  }
  return found;
}

describe("the place matrix, built from the code", () => {
  it("has a row for every call of a path to a model or to memory, and no row without one", () => {
    const rows = new Set(ENTRY_PATHS.map((path) => `${path.file} ${path.sink}`));
    const calls = callSites();
    expect([...calls].filter((call) => !rows.has(call)).sort()).toEqual([]);
    expect([...rows].filter((row) => !calls.has(row)).sort()).toEqual([]);
  });

  it("gives every place path a cell for every rule, each held by a test that exists", () => {
    for (const path of ENTRY_PATHS.filter((entry) => entry.kind === "place")) {
      expect(Object.keys(path.rules ?? {}).sort(), path.name).toEqual([...PLACE_RULES].sort());
      for (const [rule, cell] of Object.entries(path.rules ?? {})) {
        if ("na" in cell) {
          expect(cell.na.length, `${path.name}: ${rule}`).toBeGreaterThan(10);
          continue;
        }
        const [file, title] = cell.heldBy.split(" › ") as [string, string];
        // The matrix names its own tests from this table, and fails itself on a cell it lacks.
        if (file === "test/security/place-matrix.test.ts") continue;
        const text = readFileSync(join(ROOT, file), "utf8");
        const titles = [...text.matchAll(/\bit\(\s*(?:"([^"]*)"|`([^`]*)`)/g)].map(
          (match) => match[1] ?? match[2],
        );
        expect(titles, `${path.name}: ${rule} names a test in ${file}`).toContain(title);
      }
    }
  });

  it("sends every place path through the one admission", () => {
    for (const path of ENTRY_PATHS.filter((entry) => entry.kind === "place")) {
      const text = readFileSync(join(ROOT, path.file), "utf8");
      const admitted =
        /from "[./]*(clients\/)?chat\/admission\.ts"/.test(text) ||
        /\b(takeMessage|amendMessage)\(/.test(text);
      expect(admitted, `${path.name} (${path.file})`).toBe(true);
    }
  });
});
