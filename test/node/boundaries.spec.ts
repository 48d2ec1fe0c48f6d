// The layering of src/ as checks, not wishes: the pure runtime imports no platform and no other
// folder, only storage (src/db/) touches drizzle and it knows nothing built on it, the objects
// know no client, only the edges import a client; none of that holds only for one import, since a
// folder must not reach a forbidden one through another either; no file imports itself through
// others (type-only imports count), the top folders import each other in no loop, and no folder
// grows into a grab-bag of more than 20 files. Known violations that another change is removing
// are allow-listed exactly: a new one fails, and so does an allow-listed one that has gone, so the
// list only ever shrinks.
import { readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  cycleViolations,
  folderCycleViolations,
  layerViolations,
  reachViolations,
  staleCycleEdges,
  topNodeOf,
  type Violation,
} from "./boundary-rules.ts";
import { readImportGraph, type ImportEdge } from "./import-graph.ts";

/**
 * `from -> target` imports (or, for a rule on what a folder reaches, the first import of the path
 * and the file it arrives at) allowed to break a layer rule: none. A rule added later starts from its
 * exceptions here and shrinks them; never add to it otherwise.
 */
const KNOWN_LAYER_VIOLATIONS = new Set<string>([]);

/**
 * Imports allowed to close a cycle: none (env.ts types its bindings with the objects' RPC
 * interfaces in src/rpc.ts, and the journal stores a surface's delivery as opaque JSON). Each
 * entry must still close a cycle, or it must leave the list.
 */
const KNOWN_CYCLE_EDGES = new Set<string>([]);

const describeAll = (violations: Violation[]) =>
  violations.map((violation) => `${violation.rule}: ${violation.where}`).join("\n");

describe("src/ layering, read from the import graph", () => {
  let edges: ImportEdge[];

  beforeAll(() => {
    edges = readImportGraph(resolve(import.meta.dirname, "../.."), "src/");
  });

  it("sees the imports a compiler sees: type-only ones, re-exports and dynamic imports included", () => {
    expect(edges.length).toBeGreaterThan(500);
    expect(edges).toContainEqual(
      expect.objectContaining({
        from: "src/runtime/tasks/act-step.ts",
        target: "src/runtime/tasks/task-deps.ts",
        typeOnly: true,
      }),
    );
    expect(edges).toContainEqual(
      expect.objectContaining({
        from: "src/index.ts",
        specifier: "./durable-objects.ts",
        target: "src/durable-objects.ts",
      }),
    );
    expect(edges).toContainEqual(
      expect.objectContaining({
        from: "src/runtime/util/tokens.ts",
        specifier: "gpt-tokenizer/encoding/o200k_base",
        target: null,
      }),
    );
  });

  it("holds every layer rule, apart from the known violations listed here", () => {
    const found = layerViolations(edges).filter(
      (violation) => !KNOWN_LAYER_VIOLATIONS.has(violation.key),
    );
    expect(found, `new boundary violations:\n${describeAll(found)}`).toEqual([]);
  });

  it("holds every layer rule on what a folder reaches through others, too", () => {
    const found = reachViolations(edges).filter(
      (violation) => !KNOWN_LAYER_VIOLATIONS.has(violation.key),
    );
    expect(found, `folders reaching what they must not:\n${describeAll(found)}`).toEqual([]);
  });

  it("lists no known layer violation that has gone (empty the list as they are fixed)", () => {
    const present = new Set(
      [...layerViolations(edges), ...reachViolations(edges)].map((violation) => violation.key),
    );
    const gone = [...KNOWN_LAYER_VIOLATIONS].filter((key) => !present.has(key));
    expect(gone, "remove these from KNOWN_LAYER_VIOLATIONS").toEqual([]);
  });

  it("has no import cycle apart from the known ones listed here", () => {
    const found = cycleViolations(edges, "src/", KNOWN_CYCLE_EDGES);
    expect(found, `import cycles:\n${describeAll(found)}`).toEqual([]);
  });

  it("has no loop among the top folders of src/, counting value imports", () => {
    const found = folderCycleViolations(edges, "src/");
    expect(found, `loops among the top folders:\n${describeAll(found)}`).toEqual([]);
  });

  it("lists no known cycle edge that is gone or no longer closes a cycle", () => {
    expect(
      staleCycleEdges(edges, "src/", KNOWN_CYCLE_EDGES),
      "remove these from KNOWN_CYCLE_EDGES",
    ).toEqual([]);
  });
});

/** The most source files one folder of src/ may hold before it is split by what its files serve. */
const MAX_FILES_PER_FOLDER = 20;

describe("src/ folders", () => {
  it(`hold at most ${MAX_FILES_PER_FOLDER} files each (a folder's README aside)`, () => {
    const root = resolve(import.meta.dirname, "../..");
    const crowded: string[] = [];
    const visit = (folder: string) => {
      const entries = readdirSync(folder, { withFileTypes: true });
      const files = entries.filter((entry) => entry.isFile() && entry.name !== "README.md");
      if (files.length > MAX_FILES_PER_FOLDER)
        crowded.push(`${relative(root, folder)}: ${files.length} files`);
      for (const entry of entries) if (entry.isDirectory()) visit(join(folder, entry.name));
    };
    visit(join(root, "src"));
    expect(crowded, "split these folders by what their files serve").toEqual([]);
  });
});

describe("the boundary rules themselves, on a made-up graph", () => {
  const edge = (
    from: string,
    specifier: string,
    target: string | null,
    typeOnly = false,
  ): ImportEdge => ({ from, specifier, target, typeOnly, line: 7 });

  it("names the file, line and import of each kind of violation", () => {
    const made = [
      edge("src/runtime/a.ts", "hono", null),
      edge("src/runtime/a.ts", "cloudflare:workers", null),
      edge("src/runtime/a.ts", "../db/memory/b.ts", "src/db/memory/b.ts", true),
      edge("src/http/c.ts", "drizzle-orm/d1", null),
      edge("src/db/memory/b.ts", "../../objects/d.ts", "src/objects/d.ts", true),
      edge("src/objects/d.ts", "../clients/discord/e.ts", "src/clients/discord/e.ts"),
      edge("src/db/memory/b.ts", "drizzle-orm", null),
      edge("src/db/f.ts", "drizzle-orm/d1", null),
      edge("src/runtime/a.ts", "zod", null),
      edge("src/db/f.ts", "../http/g.ts", "src/http/g.ts"),
      edge("src/db/f.ts", "../clients/instagram/h.ts", "src/clients/instagram/h.ts", true),
      edge("src/db/memory/b.ts", "../../clients/discord/e.ts", "src/clients/discord/e.ts"),
      edge("src/db/f.ts", "../mcp-registry.ts", "src/mcp-registry.ts"),
      edge("src/db/f.ts", "../mcp/connections.ts", "src/mcp/connections.ts"),
      edge("src/media/i.ts", "../clients/instagram/h.ts", "src/clients/instagram/h.ts", true),
      edge("src/plugins/j.ts", "../clients/instagram/h.ts", "src/clients/instagram/h.ts"),
      edge("src/clients/discord/gateway/k.ts", "../../../http/l.ts", "src/http/l.ts"),
      edge("src/http/l.ts", "../clients/discord/e.ts", "src/clients/discord/e.ts"),
      edge("src/clients/chat/m.ts", "../telegram/n.ts", "src/clients/telegram/n.ts"),
      edge("src/clients/telegram/n.ts", "../discord/e.ts", "src/clients/discord/e.ts"),
      edge("src/clients/telegram/n.ts", "../chat/m.ts", "src/clients/chat/m.ts"),
      edge("src/objects/d.ts", "../plugins/o.ts", "src/plugins/o.ts", true),
    ];
    expect(layerViolations(made).map((violation) => violation.where)).toEqual([
      'src/runtime/a.ts:7 imports "hono"',
      'src/runtime/a.ts:7 imports "cloudflare:workers"',
      'src/runtime/a.ts:7 imports "../db/memory/b.ts" (type only)',
      'src/http/c.ts:7 imports "drizzle-orm/d1"',
      'src/db/memory/b.ts:7 imports "../../objects/d.ts" (type only)',
      'src/objects/d.ts:7 imports "../clients/discord/e.ts"',
      'src/objects/d.ts:7 imports "../clients/discord/e.ts"',
      'src/db/f.ts:7 imports "../http/g.ts"',
      'src/db/f.ts:7 imports "../clients/instagram/h.ts" (type only)',
      'src/db/f.ts:7 imports "../clients/instagram/h.ts" (type only)',
      'src/db/memory/b.ts:7 imports "../../clients/discord/e.ts"',
      'src/db/memory/b.ts:7 imports "../../clients/discord/e.ts"',
      'src/db/f.ts:7 imports "../mcp/connections.ts"',
      'src/media/i.ts:7 imports "../clients/instagram/h.ts" (type only)',
      'src/clients/discord/gateway/k.ts:7 imports "../../../http/l.ts"',
      'src/clients/chat/m.ts:7 imports "../telegram/n.ts"',
      'src/clients/telegram/n.ts:7 imports "../discord/e.ts"',
      'src/objects/d.ts:7 imports "../plugins/o.ts" (type only)',
    ]);
  });

  it("follows value imports through other folders to what a folder must not reach", () => {
    const made = [
      // objects -> plugins -> a client: each import allowed alone, the path is not.
      edge("src/objects/a.ts", "../plugins/p.ts", "src/plugins/p.ts"),
      edge("src/plugins/p.ts", "../clients/instagram/h.ts", "src/clients/instagram/h.ts"),
      // A type-only import loads nothing, so nothing is reached through it.
      edge("src/objects/b.ts", "../plugins/q.ts", "src/plugins/q.ts", true),
      edge("src/plugins/q.ts", "../clients/discord/e.ts", "src/clients/discord/e.ts"),
      // An import straight into a forbidden folder is the direct rules' to report.
      edge("src/objects/c.ts", "../clients/discord/e.ts", "src/clients/discord/e.ts"),
      // Storage through the configuration to a folder above it; the rate-rule arithmetic aside.
      edge("src/db/f.ts", "../config.ts", "src/config.ts"),
      edge("src/config.ts", "./rate-limits/token-bucket.ts", "src/rate-limits/token-bucket.ts"),
      edge("src/config.ts", "./mcp/m.ts", "src/mcp/m.ts"),
      // A client through media to the HTTP edge.
      edge("src/clients/slack/k.ts", "../../media/x.ts", "src/media/x.ts"),
      edge("src/media/x.ts", "../http/l.ts", "src/http/l.ts"),
      // The chat layer, and one platform, through a shared file to a platform's folder.
      edge("src/clients/chat/m.ts", "../shared.ts", "src/clients/shared.ts"),
      edge("src/clients/telegram/n.ts", "../shared.ts", "src/clients/shared.ts"),
      edge("src/clients/shared.ts", "./discord/e.ts", "src/clients/discord/e.ts"),
    ];
    expect(reachViolations(made).map(({ rule, key, where }) => [rule, key, where])).toEqual([
      [
        "src/db/ reaches nothing above it",
        "src/db/f.ts -> src/mcp/m.ts",
        'src/db/f.ts:7 imports "../config.ts" -> src/config.ts:7 imports "./mcp/m.ts"',
      ],
      [
        "src/objects/ reaches no src/clients/",
        "src/objects/a.ts -> src/clients/instagram/h.ts",
        'src/objects/a.ts:7 imports "../plugins/p.ts" -> src/plugins/p.ts:7 imports "../clients/instagram/h.ts"',
      ],
      [
        "only the edges reach src/clients/",
        "src/objects/a.ts -> src/clients/instagram/h.ts",
        'src/objects/a.ts:7 imports "../plugins/p.ts" -> src/plugins/p.ts:7 imports "../clients/instagram/h.ts"',
      ],
      [
        "src/clients/ reaches no src/http/",
        "src/clients/slack/k.ts -> src/http/l.ts",
        'src/clients/slack/k.ts:7 imports "../../media/x.ts" -> src/media/x.ts:7 imports "../http/l.ts"',
      ],
      [
        "src/clients/chat/ reaches no platform's folder",
        "src/clients/chat/m.ts -> src/clients/discord/e.ts",
        'src/clients/chat/m.ts:7 imports "../shared.ts" -> src/clients/shared.ts:7 imports "./discord/e.ts"',
      ],
      [
        "a platform's client reaches no other platform's",
        "src/clients/telegram/n.ts -> src/clients/discord/e.ts",
        'src/clients/telegram/n.ts:7 imports "../shared.ts" -> src/clients/shared.ts:7 imports "./discord/e.ts"',
      ],
    ]);
  });

  it("finds a loop among top folders, and among them a file at the top of src/", () => {
    const made = [
      edge("src/log.ts", "./telemetry/c.ts", "src/telemetry/c.ts"),
      edge("src/telemetry/o.ts", "../log.ts", "src/log.ts"),
      edge("src/db/s.ts", "../mcp/r.ts", "src/mcp/r.ts", true),
      edge("src/mcp/p.ts", "../db/s.ts", "src/db/s.ts"),
      // Files of one folder importing each other make no loop between folders.
      edge("src/db/x.ts", "./memory/y.ts", "src/db/memory/y.ts"),
      edge("src/db/memory/y.ts", "../x.ts", "src/db/x.ts"),
      edge("src/http/a.ts", "../plugins/b.ts", "src/plugins/b.ts"),
      edge("src/plugins/b.ts", "../clients/c.ts", "src/clients/c.ts"),
      edge("src/clients/c.ts", "../objects/d.ts", "src/objects/d.ts"),
    ];
    expect(topNodeOf("src/db/memory/y.ts", "src/")).toBe("src/db/");
    expect(topNodeOf("src/log.ts", "src/")).toBe("src/log.ts");
    expect(folderCycleViolations(made, "src/").map(({ key, where }) => [key, where])).toEqual([
      [
        "src/log.ts <-> src/telemetry/",
        'src/log.ts -> src/telemetry/ (src/log.ts:7 imports "./telemetry/c.ts"), src/telemetry/ -> src/log.ts (src/telemetry/o.ts:7 imports "../log.ts")',
      ],
    ]);
    expect(folderCycleViolations(made, "src/", { typeOnly: true }).map(({ key }) => key)).toEqual([
      "src/db/ <-> src/mcp/",
      "src/log.ts <-> src/telemetry/",
    ]);
  });

  it("finds a cycle made of type-only imports and shows it import by import", () => {
    const made = [
      edge("src/x.ts", "./y.ts", "src/y.ts", true),
      edge("src/y.ts", "./z.ts", "src/z.ts"),
      edge("src/z.ts", "./x.ts", "src/x.ts", true),
      edge("src/z.ts", "./w.ts", "src/w.ts"),
    ];
    const [cycle, ...more] = cycleViolations(made, "src/");
    expect(more).toEqual([]);
    expect(cycle!.key).toBe("src/x.ts <-> src/y.ts <-> src/z.ts");
    expect(cycle!.where).toBe(
      'src/x.ts:7 imports "./y.ts" (type only) -> src/y.ts:7 imports "./z.ts" -> src/z.ts:7 imports "./x.ts" (type only)',
    );
    expect(cycleViolations(made, "src/", new Set(["src/z.ts -> src/x.ts"]))).toEqual([]);
  });

  it("calls an allowed cycle edge stale once the cycle is broken elsewhere", () => {
    const closing = edge("src/z.ts", "./x.ts", "src/x.ts");
    const allowed = new Set(["src/z.ts -> src/x.ts", "src/q.ts -> src/r.ts"]);
    expect(
      staleCycleEdges([edge("src/x.ts", "./z.ts", "src/z.ts"), closing], "src/", allowed),
    ).toEqual(["src/q.ts -> src/r.ts"]);
    expect(staleCycleEdges([closing], "src/", allowed)).toEqual([
      "src/z.ts -> src/x.ts",
      "src/q.ts -> src/r.ts",
    ]);
  });
});
