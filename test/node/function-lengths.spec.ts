// A function reads in one screen (STYLE.md, line 21): no function of src/runtime/ or src/objects/
// is over 100 lines of its own, counted by scripts/function-lengths.ts, which a factory's nested
// functions count apart from. `npx node scripts/function-lengths.ts` prints the longest.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import {
  MAX_FUNCTION_LINES,
  MEASURED_FOLDERS,
  measureFunctions,
} from "../../scripts/function-lengths.ts";

describe("function lengths", () => {
  it("counts a function's own lines, less the functions nested in it", () => {
    const root = mkdtempSync(join(tmpdir(), "function-lengths-"));
    try {
      writeFileSync(
        join(root, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { strict: true, noEmit: true }, include: ["src"] }),
      );
      const source = [
        "export function factory() {", // 1
        "  const a = 1;", // 2
        "  const inner = () => {", // 3: inner spans 3..6
        "    const b = 2;", // 4
        "    return b;", // 5
        "  };", // 6
        "  return { method() { return a; }, inner };", // 7: a one-line method
        "}", // 8
        "",
        "class Thing {",
        "  constructor() {",
        "    this.x = 1;",
        "  }",
        "  x: number;",
        "}",
        "",
      ].join("\n");
      mkdirSync(join(root, "src"));
      writeFileSync(join(root, "src/made-up.ts"), source);
      const lengths = measureFunctions(root, ["src/"]);
      const byName = new Map(lengths.map((f) => [f.name, f]));
      // 8 lines, less inner's 4 and the method's 1 (on a line the factory also owns).
      expect(byName.get("factory")).toMatchObject({ file: "src/made-up.ts", line: 1, lines: 3 });
      expect(byName.get("inner")).toMatchObject({ line: 3, lines: 4 });
      expect(byName.get("method")).toMatchObject({ line: 7, lines: 1 });
      expect(byName.get("constructor")).toMatchObject({ line: 11, lines: 3 });
      expect(lengths[0]?.name).toBe("inner");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines in src/runtime/ and src/objects/`, () => {
    const lengths = measureFunctions(resolve(import.meta.dirname, "../.."), MEASURED_FOLDERS);
    expect(lengths.length).toBeGreaterThan(100);
    const over = lengths
      .filter((f) => f.lines > MAX_FUNCTION_LINES)
      .map((f) => `${f.file}:${f.line} ${f.name ?? "(anonymous)"}: ${f.lines} lines`);
    expect(over).toEqual([]);
  });
});
