// The house's layering rules as a function of the import graph (test/node/import-graph.ts), so
// test/node/boundaries.spec.ts can hold them against src/ and prove on a made-up graph that each
// rule fires. A violation names the importing file, its line and the import as written.
import type { ImportEdge } from "./import-graph.ts";

export interface Violation {
  rule: string;
  /** `from -> target` (or the package specifier): what an allow-list entry matches. */
  key: string;
  /** `src/runtime/x.ts:3 imports "hono"`, for the failure message. */
  where: string;
}

/** Packages the pure runtime must not import: the platform, the web framework, the database. */
const PLATFORM_PACKAGE = /^(cloudflare:|agents(\/|$)|hono(\/|$)|@hono\/|drizzle-orm(\/|$))/;

const edgeKey = (edge: ImportEdge) => `${edge.from} -> ${edge.target ?? edge.specifier}`;
const where = (edge: ImportEdge) =>
  `${edge.from}:${edge.line} imports "${edge.specifier}"${edge.typeOnly ? " (type only)" : ""}`;
const inside = (path: string | null, folder: string): boolean => path?.startsWith(folder) === true;

/**
 * What storage (src/db/, long-term memory in src/db/memory/ included) must not reach: everything
 * built on it. The MCP registry it validates against is src/mcp-registry.ts, a leaf below it.
 */
const ABOVE_STORAGE = [
  "src/objects/",
  "src/http/",
  "src/clients/",
  "src/plugins/",
  "src/media/",
  "src/mcp/",
  "src/rate-limits/",
  "src/telemetry/",
  "src/index.ts",
  "src/durable-objects.ts",
];

/**
 * Files of a folder above storage that the configuration (src/config.ts, which storage imports)
 * uses: the token-bucket arithmetic, a pure leaf, parses the configured rate rules. Storage may
 * reach it through the configuration; importing it directly stays forbidden.
 */
const BELOW_CONFIG = ["src/rate-limits/token-bucket.ts"];

/** The files that may import a client: the surfaces' edges and the entry points. */
const EDGES = [
  "src/http/",
  "src/plugins/",
  "src/clients/",
  "src/index.ts",
  "src/durable-objects.ts",
];

const RULES: Array<{ rule: string; breaks: (edge: ImportEdge) => boolean }> = [
  {
    rule: "src/runtime/ imports no platform package (cloudflare:*, agents, hono, drizzle-orm)",
    breaks: (edge) => inside(edge.from, "src/runtime/") && PLATFORM_PACKAGE.test(edge.specifier),
  },
  {
    rule: "src/runtime/ imports nothing from other src/ folders",
    breaks: (edge) =>
      inside(edge.from, "src/runtime/") &&
      inside(edge.target, "src/") &&
      !inside(edge.target, "src/runtime/"),
  },
  {
    rule: "only src/db/ imports drizzle-orm",
    breaks: (edge) => /^drizzle-orm(\/|$)/.test(edge.specifier) && !inside(edge.from, "src/db/"),
  },
  {
    rule: "src/db/ imports nothing above it (objects, edges, plugins, media, MCP, telemetry)",
    breaks: (edge) =>
      inside(edge.from, "src/db/") && ABOVE_STORAGE.some((folder) => inside(edge.target, folder)),
  },
  {
    rule: "src/objects/ imports no src/clients/ (surfaces arrive as interfaces)",
    breaks: (edge) => inside(edge.from, "src/objects/") && inside(edge.target, "src/clients/"),
  },
  {
    rule: "src/objects/ imports no src/plugins/ (the entry point hands rooms their plugins)",
    breaks: (edge) => inside(edge.from, "src/objects/") && inside(edge.target, "src/plugins/"),
  },
  {
    rule: "only the edges (src/http/, src/plugins/, the entry points, the clients) import src/clients/",
    breaks: (edge) =>
      inside(edge.target, "src/clients/") && !EDGES.some((edgeFile) => inside(edge.from, edgeFile)),
  },
  {
    rule: "src/clients/ imports no src/http/ (a client is an edge of its own)",
    breaks: (edge) => inside(edge.from, "src/clients/") && inside(edge.target, "src/http/"),
  },
  {
    rule: "src/clients/chat/ imports no platform's folder (the shared chat layer knows none)",
    breaks: (edge) =>
      inside(edge.from, "src/clients/chat/") &&
      inside(edge.target, "src/clients/") &&
      !inside(edge.target, "src/clients/chat/"),
  },
  {
    rule: "a platform's client imports no other platform's (they share src/clients/chat/)",
    breaks: (edge) => {
      const from = platformOf(edge.from);
      const target = platformOf(edge.target);
      return from !== null && target !== null && from !== target;
    },
  },
];

/** `discord`, `telegram`, … for a file under src/clients/<platform>/; null elsewhere or for chat/. */
function platformOf(file: string | null): string | null {
  if (file === null) return null;
  const match = /^src\/clients\/([^/]+)\//.exec(file);
  return match && match[1] !== "chat" ? match[1]! : null;
}

export function layerViolations(edges: readonly ImportEdge[]): Violation[] {
  return edges.flatMap((edge) =>
    RULES.filter(({ breaks }) => breaks(edge)).map(({ rule }) => ({
      rule,
      key: edgeKey(edge),
      where: where(edge),
    })),
  );
}

/**
 * The layer rules again, on what a folder reaches through others: from each import that leaves
 * a rule's folder, the value imports that follow must not arrive where the rule forbids (the
 * imports a file makes itself are the direct rules' to hold). `objects/` importing a plugin that
 * imports a client breaks "src/objects/ reaches no src/clients/" though each import alone is
 * allowed. Value imports only: a type-only import loads nothing, and the direct rules hold it.
 * src/runtime/ needs no rule here: it imports nothing outside it, so it reaches nothing.
 */
const REACH_RULES: Array<{
  rule: string;
  /** Which side of the rule a file is on: files of one group start a path; null for the rest. */
  group: (file: string) => string | null;
  /** Whether a path from the group may not arrive at `target`. */
  forbids: (group: string, target: string) => boolean;
}> = [
  {
    rule: "src/db/ reaches nothing above it",
    group: (file) => (inside(file, "src/db/") ? "db" : null),
    forbids: (_, target) =>
      ABOVE_STORAGE.some((folder) => inside(target, folder)) && !BELOW_CONFIG.includes(target),
  },
  {
    rule: "src/objects/ reaches no src/clients/",
    group: (file) => (inside(file, "src/objects/") ? "objects" : null),
    forbids: (_, target) => inside(target, "src/clients/"),
  },
  {
    rule: "only the edges reach src/clients/",
    group: (file) => (EDGES.some((edgeFile) => inside(file, edgeFile)) ? null : "inner"),
    forbids: (_, target) => inside(target, "src/clients/"),
  },
  {
    rule: "src/clients/ reaches no src/http/",
    group: (file) => (inside(file, "src/clients/") ? "clients" : null),
    forbids: (_, target) => inside(target, "src/http/"),
  },
  {
    rule: "src/clients/chat/ reaches no platform's folder",
    group: (file) => (inside(file, "src/clients/chat/") ? "chat" : null),
    forbids: (_, target) => platformOf(target) !== null,
  },
  {
    rule: "a platform's client reaches no other platform's",
    group: platformOf,
    forbids: (platform, target) => platformOf(target) !== null && platformOf(target) !== platform,
  },
];

export function reachViolations(edges: readonly ImportEdge[]): Violation[] {
  const graph: Graph = new Map();
  for (const edge of edges) {
    if (edge.typeOnly || !inside(edge.target, "src/")) continue;
    graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge]);
  }
  return REACH_RULES.flatMap(({ rule, group, forbids }) =>
    [...graph.values()].flat().flatMap((exit) => {
      const from = group(exit.from);
      const target = exit.target!;
      if (from === null || group(target) === from || forbids(from, target)) return [];
      const rest = shortestPath(graph, target, (file) => forbids(from, file));
      if (!rest) return [];
      const path = [exit, ...rest];
      return [
        {
          rule,
          key: `${exit.from} -> ${path.at(-1)!.target}`,
          where: path.map((edge) => where(edge)).join(" -> "),
        },
      ];
    }),
  );
}

/** The imports of a shortest path from `start` to a file `arrives` accepts; null if none. */
function shortestPath(
  graph: Graph,
  start: string,
  arrives: (file: string) => boolean,
): ImportEdge[] | null {
  const cameBy = new Map<string, ImportEdge | null>([[start, null]]);
  const queue = [start];
  for (let at = 0; at < queue.length; at++) {
    for (const edge of graph.get(queue[at]!) ?? []) {
      const target = edge.target!;
      if (cameBy.has(target)) continue;
      cameBy.set(target, edge);
      if (arrives(target)) {
        const path: ImportEdge[] = [];
        for (let step = cameBy.get(target); step; step = cameBy.get(step.from)) path.unshift(step);
        return path;
      }
      queue.push(target);
    }
  }
  return null;
}

/** The node a file is in the graph of top folders: `src/db/` for src/db/stores/x.ts, src/log.ts itself. */
export function topNodeOf(file: string, under: string): string {
  const slash = file.indexOf("/", under.length);
  return slash === -1 ? file : file.slice(0, slash + 1);
}

/**
 * Loops among the top folders of `under` (a file at the top, like src/log.ts, is a node of its
 * own), counting value imports, or type-only ones too: one violation per strongly connected set
 * of folders, showing one loop through it with an import for each step.
 */
export function folderCycleViolations(
  edges: readonly ImportEdge[],
  under: string,
  { typeOnly = false }: { typeOnly?: boolean } = {},
): Violation[] {
  const graph: Graph = new Map();
  const madeBy = new Map<ImportEdge, ImportEdge>();
  for (const edge of edges) {
    if (!inside(edge.from, under) || !inside(edge.target, under)) continue;
    if (edge.typeOnly && !typeOnly) continue;
    const from = topNodeOf(edge.from, under);
    const target = topNodeOf(edge.target!, under);
    const out = graph.get(from) ?? [];
    graph.set(from, out);
    // One edge per pair of folders (the first import seen), which the loop shows as its example.
    if (from === target || out.some((known) => known.target === target)) continue;
    const folderEdge = { ...edge, from, target };
    madeBy.set(folderEdge, edge);
    out.push(folderEdge);
  }
  return components(graph).map((component) => ({
    rule: `no loop among the top folders of ${under} (${typeOnly ? "type-only imports count" : "value imports"})`,
    key: [...component].sort().join(" <-> "),
    where: cycleThrough(graph, component)
      .map((step) => `${step.from} -> ${step.target} (${where(madeBy.get(step)!)})`)
      .join(", "),
  }));
}

/**
 * Import cycles among files under `under`, type-only imports included, once the allowed
 * cycle-closing edges (`from -> target`) are taken out: one violation per strongly connected
 * component, showing one cycle through it import by import.
 */
export function cycleViolations(
  edges: readonly ImportEdge[],
  under: string,
  allowedEdges: ReadonlySet<string> = new Set(),
): Violation[] {
  const graph = localGraph(edges, under, allowedEdges);
  return components(graph).map((component) => {
    const cycle = cycleThrough(graph, component);
    return {
      rule: "no import cycles among src/ files (type-only imports count)",
      key: [...component].sort().join(" <-> "),
      where: cycle.map((edge) => where(edge)).join(" -> "),
    };
  });
}

/** The allowed cycle-closing edges that no longer exist or no longer close a cycle. */
export function staleCycleEdges(
  edges: readonly ImportEdge[],
  under: string,
  allowedEdges: ReadonlySet<string>,
): string[] {
  const graph = localGraph(edges, under, new Set());
  const componentOf = new Map<string, number>();
  for (const [index, component] of components(graph).entries()) {
    for (const file of component) componentOf.set(file, index);
  }
  return [...allowedEdges].filter((key) => {
    const edge = edges.find((candidate) => edgeKey(candidate) === key);
    if (!edge || edge.target === null) return true;
    const component = componentOf.get(edge.from);
    return component === undefined || componentOf.get(edge.target) !== component;
  });
}

type Graph = Map<string, ImportEdge[]>;

function localGraph(
  edges: readonly ImportEdge[],
  under: string,
  leaveOut: ReadonlySet<string>,
): Graph {
  const graph: Graph = new Map();
  for (const edge of edges) {
    if (!inside(edge.from, under)) continue;
    if (!graph.has(edge.from)) graph.set(edge.from, []);
    if (inside(edge.target, under) && !leaveOut.has(edgeKey(edge)))
      graph.get(edge.from)!.push(edge);
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one file, or a file importing itself. */
function components(graph: Graph): Array<Set<string>> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: Array<Set<string>> = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const { target } of graph.get(file) ?? []) {
      if (!index.has(target!)) {
        visit(target!);
        low.set(file, Math.min(low.get(file)!, low.get(target!)!));
      } else if (onStack.has(target!)) {
        low.set(file, Math.min(low.get(file)!, index.get(target!)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component = new Set<string>();
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      component.add(member);
      if (member === file) break;
    }
    const selfImport = (graph.get(file) ?? []).some((edge) => edge.target === file);
    if (component.size > 1 || selfImport) found.push(component);
  };
  for (const file of [...graph.keys()].sort()) if (!index.has(file)) visit(file);
  return found;
}

/** One cycle inside a component: a shortest path from its first file back to itself. */
function cycleThrough(graph: Graph, component: Set<string>): ImportEdge[] {
  const start = [...component].sort()[0]!;
  const cameBy = new Map<string, ImportEdge>();
  const queue = [start];
  for (let at = 0; at < queue.length; at++) {
    for (const edge of graph.get(queue[at]!) ?? []) {
      const target = edge.target!;
      if (!component.has(target)) continue;
      if (target === start) {
        const path = [edge];
        for (let back = edge.from; back !== start; back = cameBy.get(back)!.from)
          path.unshift(cameBy.get(back)!);
        return path;
      }
      if (!cameBy.has(target)) {
        cameBy.set(target, edge);
        queue.push(target);
      }
    }
  }
  throw new Error(`no cycle through ${start}, although it is in a strongly connected component`);
}
