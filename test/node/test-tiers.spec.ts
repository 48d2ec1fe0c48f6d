// The test tiers as checks (docs/testing.md, "Tiers"), read from the import graph the compiler
// sees: a file of the Node tiers (test/runtime/, test/tiers.ts's NODE_TIER_FILES) reaches no
// platform module, and a workerd test that reaches none is either moved to the Node tier or named
// in WORKERD_BY_CHOICE with its reason, so the slow tier holds only what needs workerd.
import { readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { NODE_TIER_FILES, WORKERD_BY_CHOICE } from "../tiers.ts";
import { readImportGraph, type ImportEdge } from "./import-graph.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** What only workerd provides: its modules, the agents SDK built on them, and compiled wasm. */
const PLATFORM = /^(cloudflare:|workerd:|agents(\/|$))|\.wasm$/;

function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

describe("test tiers, read from the import graph", () => {
  let valueImports: Map<string, ImportEdge[]>;

  beforeAll(() => {
    valueImports = new Map();
    for (const edge of readImportGraph(ROOT, "")) {
      if (edge.typeOnly) continue;
      const list = valueImports.get(edge.from) ?? [];
      list.push(edge);
      valueImports.set(edge.from, list);
    }
  });

  /** The first platform module a file reaches, as the chain of imports that gets there. */
  function platformChain(file: string): string[] | null {
    const seen = new Set<string>([file]);
    const queue: Array<{ file: string; chain: string[] }> = [{ file, chain: [file] }];
    while (queue.length > 0) {
      const { file: current, chain } = queue.shift()!;
      for (const edge of valueImports.get(current) ?? []) {
        if (PLATFORM.test(edge.specifier)) return [...chain, edge.specifier];
        if (edge.target && !seen.has(edge.target)) {
          seen.add(edge.target);
          queue.push({ file: edge.target, chain: [...chain, edge.target] });
        }
      }
    }
    return null;
  }

  it("runs nothing in the Node tiers that reaches a platform module", () => {
    const nodeTier = [...testFiles("test/runtime"), ...NODE_TIER_FILES];
    const reaching = nodeTier
      .map((file) => ({ file, chain: platformChain(file) }))
      .filter((found) => found.chain !== null)
      .map((found) => found.chain!.join(" -> "));
    expect(reaching).toEqual([]);
  });

  it("runs in workerd only tests that need it, or are named with their reason", () => {
    const nodeTier = new Set(NODE_TIER_FILES);
    const workerd = testFiles("test")
      .filter((file) => !file.startsWith("test/runtime/") && !nodeTier.has(file))
      .filter((file) => !file.startsWith("test/node/") && !file.startsWith("test/e2e/"));
    const platformFree = workerd.filter((file) => platformChain(file) === null);
    expect(platformFree.filter((file) => !(file in WORKERD_BY_CHOICE))).toEqual([]);
    // A reason that no longer holds (the file now needs workerd, or is gone) leaves the list.
    expect(Object.keys(WORKERD_BY_CHOICE).filter((file) => !platformFree.includes(file))).toEqual(
      [],
    );
  });

  it("lists each Node-tier file once, and only files that exist", () => {
    expect(new Set(NODE_TIER_FILES).size).toBe(NODE_TIER_FILES.length);
    const existing = new Set(testFiles("test"));
    expect(NODE_TIER_FILES.filter((file) => !existing.has(file))).toEqual([]);
  });
});
