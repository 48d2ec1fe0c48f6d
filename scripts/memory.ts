// `npm run memory -- <list|similar|clear|stats|init|knowledge|move>`: look into and manage an agent's long-term
// memory over the HTTP API, against the local dev server (token from .dev.vars) or a deployed
// worker (--url, --token). Only the API, never D1 directly, so it works the same everywhere.
// Tables fit the terminal; --json prints the raw answers. Exit code 0 on success, 1 otherwise.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { MAX_AGENT_BODY_BYTES } from "../src/http/body-limits.ts";
import type { MoveProgress } from "../src/db/moves/agent-move.ts";
import type { KnowledgeItem } from "../src/runtime/character.ts";
import type { KnowledgeFiles } from "./knowledge-files.ts";

export const HELP = `Usage: npm run memory -- <command> --agent <id> [options]

Commands:
  list      [--room R] [--user U] [--type T] [--limit N] [--cursor C]   newest first (limit 50)
  similar   "query" [--room R] [--user U] [--type T] [--threshold X] [--limit N]
            the hybrid search the agent uses (full text + vectors); limit 10, at most 100
  clear     [--room R] [--user U] [--type T] [--id I] --yes   delete memories and their
            vectors (a document's fragments with it); without --yes, shows what would be
            deleted and deletes nothing
  stats     counts by type, memories waiting for a vector, embedder and vector index
  init      checks that the embedder and the vector index agree, then embeds every memory
            still waiting for a vector; after an upgrade to per-agent memory ids it also
            deletes the agent's Vectorize vectors stored under the old ids (their memories
            wait for a vector again). Safe to run again
  knowledge <file|folder>...   stores each .md/.txt file as a knowledge document of the agent
            (folders are read recursively); the same file again replaces its document
  move <DB|MEMORY_DB_n> [--abort]   moves the agent's memories, rooms and inspector records to
            that database while it keeps answering (copy, fence, verify, switch, clean up:
            docs/scaling.md); an interrupted move resumes where it stopped when run again;
            --abort rolls back a move that has not switched yet. Needs the admin token
  knowledge --character FILE   the same for the path and directory entries of a character
            file, which are relative to it and must stay inside its folder (--agent defaults
            to the character's id, as POST /agents and npm run seed derive it)

Options:
  --agent A    the agent (required)
  --type T     message, fact, description, lore, document, fragment, summary; comma-separate several
  --character F  a character file (knowledge)
  --id I       memory ids (as list shows them); comma-separate several
  --url URL    the worker (default: $EDGE_AGENTS_URL, else http://localhost:8787)
  --token T    API token (default: $EDGE_AGENTS_TOKEN, else ADMIN_TOKEN from .dev.vars for a local URL)
  --abort      move: roll back the move under way instead
  --json       print the API's JSON instead of tables
  --help       this text`;

const COMMANDS = ["list", "similar", "clear", "stats", "init", "knowledge", "move"] as const;
type Command = (typeof COMMANDS)[number];
const TYPES = ["message", "fact", "description", "lore", "document", "fragment", "summary"];
/** Options each command accepts besides --agent, --url, --token, --json and --help. */
const COMMAND_OPTIONS: Record<Command, readonly string[]> = {
  list: ["room", "user", "type", "limit", "cursor"],
  similar: ["room", "user", "type", "threshold", "limit"],
  clear: ["room", "user", "type", "id", "yes"],
  stats: [],
  init: [],
  knowledge: ["character"],
  move: ["abort"],
};
const MAX_LIST = 10_000;
/** `clear` counts a filtered selection by paging through it; past this it says "at least". */
const COUNT_CAP = 5_000;
const REQUEST_TIMEOUT_MS = 120_000;
const MIN_LAST_COLUMN = 24;
const MIN_COLUMN = 6;

export class CliError extends Error {}

export interface CliOptions {
  command: Command;
  agent: string;
  query: string;
  /** knowledge: files and folders named on the command line. */
  paths: string[];
  character?: string;
  room?: string;
  user?: string;
  types?: string[];
  ids?: string[];
  limit?: number;
  cursor?: string;
  threshold?: number;
  yes: boolean;
  /** move: roll back instead. */
  abort: boolean;
  json: boolean;
  url: string;
  token?: string;
}

/** `asked`: --help was given (print to stdout, exit 0) rather than no command at all (exit 1). */
export type ParsedCli = { help: true; asked: boolean } | { help: false; options: CliOptions };

export function parseCli(
  argv: string[],
  env: Readonly<Record<string, string | undefined>>,
): ParsedCli {
  const spec = {
    agent: { type: "string" },
    room: { type: "string" },
    user: { type: "string" },
    type: { type: "string" },
    limit: { type: "string" },
    cursor: { type: "string" },
    threshold: { type: "string" },
    url: { type: "string" },
    token: { type: "string" },
    yes: { type: "boolean" },
    json: { type: "boolean" },
    help: { type: "boolean" },
    character: { type: "string" },
    id: { type: "string" },
    abort: { type: "boolean" },
  } as const;
  const { values, positionals } = (() => {
    try {
      return parseArgs({ args: argv, options: spec, allowPositionals: true, strict: true });
    } catch (error) {
      throw new CliError(`${error instanceof Error ? error.message : String(error)} (see --help)`);
    }
  })();
  if (values.help || positionals.length === 0) return { help: true, asked: values.help === true };
  const [name, ...rest] = positionals;
  const command = COMMANDS.find((c) => c === name);
  if (!command)
    throw new CliError(`unknown command "${name}": use one of ${COMMANDS.join(", ")} (see --help)`);
  for (const key of Object.keys(values)) {
    if (!["agent", "url", "token", "json", "help", ...COMMAND_OPTIONS[command]].includes(key))
      throw new CliError(`--${key} does not apply to ${command} (see --help)`);
  }
  if (command === "move" && rest.length !== (values.abort ? 0 : 1))
    throw new CliError(
      values.abort
        ? "move --abort takes no database: it rolls back the move under way"
        : "move takes the database to move to, e.g. npm run memory -- move MEMORY_DB_2 --agent ada",
    );
  if (command !== "similar" && command !== "knowledge" && command !== "move" && rest.length > 0)
    throw new CliError(`${command} takes no arguments besides options, got "${rest.join(" ")}"`);
  if (command === "knowledge" && rest.length > 0 === (values.character !== undefined)) {
    throw new CliError(
      "knowledge takes files and folders, or --character with a character file (one of the two), e.g. npm run memory -- knowledge docs/ --agent ada",
    );
  }
  const query = command === "similar" ? rest.join(" ").trim() : "";
  if (command === "similar" && !query)
    throw new CliError(
      'similar needs the query text, e.g. npm run memory -- similar "where does Alice live" --agent ada',
    );
  // knowledge --character may name the agent by the character file itself (its id, username or name).
  if (!values.agent && !(command === "knowledge" && values.character !== undefined))
    throw new CliError("--agent is required (see --help)");

  const types = values.type?.split(",").map((t) => t.trim());
  const ids = values.id
    ?.split(",")
    .map((id) => id.trim())
    .filter(Boolean);
  if (ids !== undefined && ids.length === 0)
    throw new CliError("--id needs at least one memory id");
  const unknownType = types?.find((t) => !TYPES.includes(t));
  if (unknownType !== undefined)
    throw new CliError(`unknown type "${unknownType}": use ${TYPES.join(", ")}`);
  const limit =
    values.limit === undefined
      ? undefined
      : integerIn("limit", values.limit, 1, command === "similar" ? 100 : MAX_LIST);
  const threshold = values.threshold === undefined ? undefined : Number(values.threshold);
  if (threshold !== undefined && !(threshold >= 0 && threshold <= 1))
    throw new CliError(`--threshold is a similarity between 0 and 1, got "${values.threshold}"`);
  const url = (values.url ?? env.EDGE_AGENTS_URL ?? "http://localhost:8787").replace(/\/+$/, "");
  if (!/^https?:\/\/[^/\s]+/.test(url))
    throw new CliError(`--url must be an http(s) URL, got "${url}"`);

  return {
    help: false,
    options: {
      command,
      agent: values.agent ?? "",
      query,
      paths: command === "knowledge" || command === "move" ? rest : [],
      abort: values.abort ?? false,
      character: values.character,
      room: values.room,
      user: values.user,
      types,
      ids,
      limit,
      cursor: values.cursor,
      threshold,
      yes: values.yes ?? false,
      json: values.json ?? false,
      url,
      token: values.token ?? env.EDGE_AGENTS_TOKEN,
    },
  };
}

function integerIn(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new CliError(`--${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  return value;
}

export function isLocalUrl(url: string): boolean {
  return /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/.test(url);
}

/** ADMIN_TOKEN from the text of a .dev.vars file (KEY=value lines, optional quotes). */
export function devVarsToken(text: string): string | undefined {
  return /^\s*ADMIN_TOKEN\s*=\s*"?([^"\s]+)"?\s*$/m.exec(text)?.[1];
}

/**
 * Plain-text table for a terminal of `width` columns. The last column (the text) takes what the
 * others leave, down to MIN_LAST_COLUMN; past that the widest other columns give up room too.
 * Cut cells end in "…".
 */
export function formatTable(headers: string[], rows: string[][], width: number): string {
  const cells = rows.map((row) =>
    headers.map((_, i) => (row[i] ?? "").replace(/\s+/g, " ").trim()),
  );
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const last = widths.length - 1;
  const others = () => widths.slice(0, last).reduce((a, b) => a + b + 2, 0);
  widths[last] = Math.max(
    Math.min(widths[last]!, MIN_LAST_COLUMN),
    Math.min(widths[last]!, width - others()),
  );
  while (others() + widths[last]! > width) {
    const widest = widths.indexOf(Math.max(...widths.slice(0, last)));
    if (widest < 0 || widest === last || widths[widest]! <= MIN_COLUMN) break;
    widths[widest]!--;
  }
  const fit = (value: string, w: number) =>
    value.length > w ? `${value.slice(0, w - 1)}…` : value.padEnd(w);
  const line = (row: string[]) =>
    row
      .map((cell, i) => fit(cell, widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(headers), widths.map((w) => "-".repeat(w)).join("  "), ...cells.map(line)].join(
    "\n",
  );
}

const memoryCount = (n: number) => (n === 1 ? "1 memory" : `${n.toLocaleString("en")} memories`);

interface MemoryView {
  id: string;
  type: string;
  roomId: string | null;
  userId: string | null;
  userName?: string;
  text: string;
  createdAt: number;
  embedded: boolean;
}

interface ScoredMemory extends MemoryView {
  score: number;
  similarity: number | null;
  matchedBy: string[];
}

interface Stats {
  total: number;
  byType: Record<string, number>;
  pendingEmbedding: number;
  embedder: { backend: string; id: string; dimensions: number };
  vectors: { backend: string; dimensions: number | null };
}

interface Health {
  embedding?: { backend: string; id: string; dimensions: number };
  vectors?: { backend: string; dimensions: number | null; status?: string };
}

export type Api = <T>(method: string, path: string, body?: unknown) => Promise<T>;

export function createApi(url: string, token: string | undefined): Api {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    let response: Response;
    try {
      response = await fetch(`${url}${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw unreachable(url, error);
    }
    const raw = await response.text();
    let parsed: unknown = null;
    try {
      parsed = raw ? JSON.parse(raw) : null;
    } catch {
      if (response.ok)
        throw new CliError(
          `${method} ${path}: the answer is not JSON (is ${url} an edge-agents worker?)`,
        );
    }
    if (response.ok) return parsed as T;
    const error = (parsed as { error?: { code?: string; message?: string } } | null)?.error;
    const hint = response.status === 401 ? " (check --token or EDGE_AGENTS_TOKEN)" : "";
    throw new CliError(
      `${method} ${path}: HTTP ${response.status} ${error?.code ?? response.statusText}: ${error?.message ?? raw.slice(0, 200)}${hint}`,
    );
  };
}

function unreachable(url: string, error: unknown): CliError {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
  const code = cause && "code" in cause ? String(cause.code) : undefined;
  if (code === "ECONNREFUSED")
    return new CliError(
      `cannot reach ${url}: connection refused. Is \`npm run dev\` running (or is --url right)?`,
    );
  if (error instanceof Error && error.name === "TimeoutError")
    return new CliError(`${url} did not answer within ${REQUEST_TIMEOUT_MS / 1000} s`);
  return new CliError(`cannot reach ${url}: ${code ?? cause?.message ?? String(error)}`);
}

/** /health needs no token, and answers 503 with the same body when a backend is wrong: read it either way. */
async function getHealth(url: string): Promise<Health> {
  let response: Response;
  try {
    response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    throw unreachable(url, error);
  }
  try {
    return (await response.json()) as Health;
  } catch {
    throw new CliError(
      `${url}/health: HTTP ${response.status}, not JSON (is ${url} an edge-agents worker?)`,
    );
  }
}

/** The token: --token, $EDGE_AGENTS_TOKEN, else ADMIN_TOKEN from .dev.vars for a local worker. */
export function resolveToken(options: { token?: string; url: string }): string {
  if (options.token) return options.token;
  const devVars = new URL("../.dev.vars", import.meta.url);
  const local =
    isLocalUrl(options.url) && existsSync(devVars)
      ? devVarsToken(readFileSync(devVars, "utf8"))
      : undefined;
  if (local) return local;
  throw new CliError(
    isLocalUrl(options.url)
      ? "no API token: run `npm run dev` once (it writes ADMIN_TOKEN to .dev.vars), or pass --token"
      : "no API token: pass --token or set EDGE_AGENTS_TOKEN",
  );
}

const query = (params: Record<string, string | undefined>) =>
  new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined),
  ).toString();
const filterOf = (o: CliOptions) => ({
  agentId: o.agent,
  roomId: o.room,
  userId: o.user,
  type: o.types?.join(","),
  id: o.ids?.join(","),
});
const when = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");
const terminalWidth = () => process.stdout.columns ?? (Number(process.env.COLUMNS) || 120);
const print = (headers: string[], rows: string[][]) =>
  console.log(rows.length === 0 ? "(none)" : formatTable(headers, rows, terminalWidth()));
const memoryRow = (m: MemoryView) => [
  m.id,
  when(m.createdAt),
  m.type,
  m.roomId ?? "",
  m.userName ?? m.userId ?? "",
  m.embedded ? "yes" : "no",
  m.text,
];
const MEMORY_HEADERS = ["id", "created", "type", "room", "user", "vector", "text"];

/** Up to `limit` memories, newest first, over as many pages as that takes. */
async function listAll(
  api: Api,
  filter: Record<string, string | undefined>,
  limit: number,
  cursor?: string,
) {
  const memories: MemoryView[] = [];
  let next: string | null = cursor ?? null;
  do {
    const page: { memories: MemoryView[]; nextCursor: string | null } = await api(
      "GET",
      `/memories?${query({ ...filter, limit: String(Math.min(200, limit - memories.length)), cursor: next ?? undefined })}`,
    );
    memories.push(...page.memories);
    next = page.nextCursor;
  } while (next && memories.length < limit);
  return { memories, nextCursor: next };
}

async function run(options: CliOptions): Promise<number> {
  const api = createApi(options.url, resolveToken(options));
  switch (options.command) {
    case "list": {
      const page = await listAll(api, filterOf(options), options.limit ?? 50, options.cursor);
      if (options.json) return out(page);
      print(MEMORY_HEADERS, page.memories.map(memoryRow));
      if (page.nextCursor)
        console.log(
          `\n${memoryCount(page.memories.length)} shown; more with --cursor ${page.nextCursor}`,
        );
      return 0;
    }
    case "similar": {
      const body = await api<{ memories: ScoredMemory[] }>("POST", "/memories/similar", {
        agentId: options.agent,
        query: options.query,
        type: options.types,
        roomId: options.room,
        userId: options.user,
        threshold: options.threshold,
        limit: options.limit,
      });
      if (options.json) return out(body);
      const similarity = (m: ScoredMemory) =>
        m.similarity === null ? "-" : m.similarity.toFixed(3);
      print(
        ["score", "similarity", "by", "type", "room", "user", "created", "text"],
        body.memories.map((m) => [
          m.score.toFixed(3),
          similarity(m),
          m.matchedBy.join("+"),
          m.type,
          m.roomId ?? "",
          m.userName ?? m.userId ?? "",
          when(m.createdAt),
          m.text,
        ]),
      );
      return 0;
    }
    case "clear":
      return clear(api, options);
    case "stats": {
      const stats = await api<Stats>("GET", `/memories/stats?${query({ agentId: options.agent })}`);
      if (options.json) return out(stats);
      print(
        ["type", "memories"],
        [
          ...Object.entries(stats.byType).map(([type, n]) => [type, String(n)]),
          ["total", String(stats.total)],
        ],
      );
      console.log(
        `\nwaiting for a vector: ${stats.pendingEmbedding}${stats.pendingEmbedding > 0 ? ` (run: npm run memory -- init --agent ${options.agent})` : ""}`,
      );
      console.log(
        `embedder:     ${stats.embedder.id} (${stats.embedder.backend}), ${stats.embedder.dimensions} dimensions`,
      );
      console.log(
        `vector index: ${stats.vectors.backend}, ${stats.vectors.dimensions === null ? "empty (takes the embedder's size)" : `${stats.vectors.dimensions} dimensions`}`,
      );
      if (
        stats.vectors.dimensions !== null &&
        stats.vectors.dimensions !== stats.embedder.dimensions
      )
        console.log(
          "warning: the embedder and the index disagree; new memories get no vector (see init)",
        );
      return 0;
    }
    case "init":
      return init(api, options);
    case "knowledge":
      return knowledge(api, options);
    case "move":
      return move(api, options);
  }
}

/** Steps the move (or its roll-back) until it is done, one request per step. */
async function move(api: Api, options: CliOptions): Promise<number> {
  const path = `/agents/${encodeURIComponent(options.agent)}/move`;
  const to = options.paths[0];
  let progress = options.abort
    ? await api<MoveProgress>("DELETE", path)
    : await api<MoveProgress>("POST", path, { to });
  let last = "";
  while (progress.phase !== "done") {
    const line = `${progress.source} -> ${progress.target}: ${progress.phase}${progress.table ? ` (${progress.table})` : ""}, ${progress.pass.sourceRows} rows read`;
    if (!options.json && line !== last) console.log(line);
    last = line;
    progress = options.abort
      ? await api<MoveProgress>("DELETE", path)
      : await api<MoveProgress>("POST", path, {});
  }
  if (options.json) return out(progress);
  if (options.abort) {
    console.log(`rolled back: ${options.agent} stays in ${progress.source}`);
    return 0;
  }
  const { pass } = progress;
  console.log(
    `moved ${options.agent} to ${progress.target}: ${pass.sourceRows} rows verified (counts ${pass.sourceRows} = ${pass.targetRows}, hash chains equal: ${pass.sourceChain === pass.targetChain}); writes held for ${(progress.switchedAt ?? 0) - (progress.fencedAt ?? 0)} ms`,
  );
  return 0;
}

async function clear(api: Api, options: CliOptions): Promise<number> {
  const filter = filterOf(options);
  if (options.yes) {
    const body = await api<{ deleted: number }>("DELETE", `/memories?${query(filter)}`);
    if (options.json) return out(body);
    console.log(`deleted ${memoryCount(body.deleted)} of ${options.agent} (and their vectors)`);
    return 0;
  }
  // Count what matches: stats answer for the whole agent or by type; rooms and users are paged.
  let count: number;
  let atLeast = false;
  const sample = await listAll(api, filter, 10);
  if (options.room === undefined && options.user === undefined && options.ids === undefined) {
    const stats = await api<Stats>("GET", `/memories/stats?${query({ agentId: options.agent })}`);
    count = options.types
      ? options.types.reduce((sum, t) => sum + (stats.byType[t] ?? 0), 0)
      : stats.total;
  } else {
    const counted = await listAll(api, filter, COUNT_CAP);
    count = counted.memories.length;
    atLeast = counted.nextCursor !== null;
  }
  const scope = [
    options.room && `room ${options.room}`,
    options.user && `user ${options.user}`,
    options.types && `type ${options.types.join(",")}`,
    options.ids && `id ${options.ids.join(",")}`,
  ]
    .filter(Boolean)
    .join(", ");
  if (options.json)
    return out({ wouldDelete: count, atLeast, sample: sample.memories }, count === 0 ? 0 : 1);
  if (count === 0) {
    console.log(`nothing matches${scope ? ` (${scope})` : ""}: nothing to delete`);
    return 0;
  }
  const documents =
    sample.memories.some((m) => m.type === "document") || options.types?.includes("document")
      ? " Documents take their fragments with them."
      : "";
  console.log(
    `This would delete ${atLeast ? "at least " : ""}${memoryCount(count)} of agent ${options.agent}${scope ? ` (${scope})` : " (all of them)"}, with their vectors.${documents} Newest first:\n`,
  );
  print(MEMORY_HEADERS, sample.memories.map(memoryRow));
  console.error("\nnothing deleted: run again with --yes to delete them");
  return 1;
}

async function init(api: Api, options: CliOptions): Promise<number> {
  const health = await getHealth(options.url);
  const { embedding, vectors } = health;
  if (!embedding || !vectors)
    throw new CliError(
      `${options.url}/health says nothing about embeddings: this worker predates long-term memory`,
    );
  if (!options.json) {
    console.log(
      `embedder:     ${embedding.id} (${embedding.backend}), ${embedding.dimensions} dimensions`,
    );
    console.log(
      `vector index: ${vectors.backend}, ${vectors.dimensions === null ? "empty (takes the embedder's size)" : `${vectors.dimensions} dimensions`}`,
    );
  }
  if (vectors.status === "unavailable")
    throw new CliError(`the ${vectors.backend} vector index does not answer; nothing was embedded`);
  if (vectors.dimensions !== null && vectors.dimensions !== embedding.dimensions) {
    throw new CliError(
      `the embedder makes ${embedding.dimensions}-dimension vectors but the ${vectors.backend} index holds ${vectors.dimensions}: nothing was embedded. ` +
        "Set EMBEDDING_MODEL / EMBEDDING_DIMENSIONS to match the index, or create a new index for this embedder (docs/memory.md).",
    );
  }
  const before = await api<Stats>("GET", `/memories/stats?${query({ agentId: options.agent })}`);
  let embedded = 0;
  // At least one call, even with nothing pending: the first one also deletes the agent's vectors
  // stored under pre-0012 ids (the worker's embedding pipeline does it before embedding).
  for (let pending = true; pending; ) {
    // The route answers `pending` as a boolean; a count is accepted too.
    const step = await api<{ embedded: number; pending: boolean | number }>(
      "POST",
      "/memories/embed",
      { agentId: options.agent },
    );
    embedded += step.embedded;
    pending = step.pending === true || (typeof step.pending === "number" && step.pending > 0);
    if (!options.json)
      process.stdout.write(
        `${process.stdout.isTTY ? "\r" : ""}embedded ${embedded} of ${before.pendingEmbedding}${process.stdout.isTTY ? "" : "\n"}`,
      );
    if (pending && step.embedded === 0)
      throw new CliError(
        "the worker embeds nothing more, yet says memories still wait: see its logs (wrangler tail)",
      );
  }
  const after = await api<Stats>("GET", `/memories/stats?${query({ agentId: options.agent })}`);
  if (options.json)
    return out({ agentId: options.agent, embedded, pending: after.pendingEmbedding });
  console.log(
    `${process.stdout.isTTY && embedded > 0 ? "\n" : ""}done: ${embedded} embedded; ${memoryCount(after.total)}, ${after.pendingEmbedding} waiting for a vector`,
  );
  return after.pendingEmbedding === 0 ? 0 : 1;
}

interface IngestResult {
  documentId: string;
  fragments: number;
  embedded: number;
  replaced: boolean;
  embeddingError?: string;
}

/**
 * Reads every file first and checks each against the endpoint's limits, so a bad file stops the
 * run before anything is sent; then one request per file (each document is stored atomically).
 */
async function knowledge(api: Api, options: CliOptions): Promise<number> {
  const { files, skipped, characterAgentId } = await knowledgeFiles(options);
  const agent = options.agent || characterAgentId!;
  const requests = files.map((file) => ({
    file,
    body: {
      text: file.text.trim(),
      title: file.title,
      documentId: file.documentId,
      format: file.format,
    },
  }));
  for (const { file, body } of requests) {
    const bytes = Buffer.byteLength(JSON.stringify(body));
    if (bytes > MAX_AGENT_BODY_BYTES)
      throw new CliError(
        `${file.path} makes a ${Math.ceil(bytes / 1024)} KiB request; the endpoint takes ${MAX_AGENT_BODY_BYTES / 1024} KiB: split it. Nothing was sent.`,
      );
  }
  if (requests.length === 0)
    throw new CliError(
      `no text or markdown file to send${skipped.length > 0 ? ` (skipped: ${skipped.map((s) => `${s.path}: ${s.reason}`).join("; ")})` : ""}`,
    );
  const results: Array<IngestResult & { path: string }> = [];
  for (const { file, body } of requests) {
    try {
      results.push({
        path: file.path,
        ...(await api<IngestResult>(
          "POST",
          `/agents/${encodeURIComponent(agent)}/knowledge`,
          body,
        )),
      });
    } catch (error) {
      const stored =
        results.length > 0
          ? ` Stored before it: ${results.map((r) => r.path).join(", ")}.`
          : " Nothing was stored.";
      throw error instanceof CliError
        ? new CliError(`${file.path}: ${error.message}.${stored}`)
        : error;
    }
  }
  if (options.json) return out({ agentId: agent, documents: results, skipped });
  print(
    ["file", "document id", "fragments", "embedded", "replaced"],
    results.map((r) => [
      r.path,
      r.documentId,
      String(r.fragments),
      String(r.embedded),
      r.replaced ? "yes" : "no",
    ]),
  );
  for (const skip of skipped) console.log(`skipped ${skip.path}: ${skip.reason}`);
  const waiting = results.filter((r) => r.embedded < r.fragments);
  if (waiting.length > 0)
    console.log(
      `\nsome fragments wait for a vector (found by text meanwhile): npm run memory -- init --agent ${agent}${waiting[0]!.embeddingError ? ` (${waiting[0]!.embeddingError})` : ""}`,
    );
  return 0;
}

async function knowledgeFiles(
  options: CliOptions,
): Promise<KnowledgeFiles & { characterAgentId?: string }> {
  // Loaded here, not at the top: the character parser and the chunker's imports cost the other
  // commands 0.3 s of start-up.
  const [
    { KnowledgeFileError, readKnowledgeFiles },
    { parseCharacter },
    { ValidationError },
    { agentIdFor },
  ] = await Promise.all([
    import("./knowledge-files.ts"),
    import("../src/characters/parse-character.ts"),
    import("../src/runtime/util/errors.ts"),
    import("../src/db/stores/agent-store.ts"),
  ]);
  try {
    if (options.character === undefined) {
      // Paths the user typed: relative to where the command runs, anywhere on the machine.
      const items = options.paths.map(
        (path): KnowledgeItem =>
          statSync(path, { throwIfNoEntry: false })?.isDirectory()
            ? { kind: "directory", directory: path, shared: false }
            : { kind: "path", path, shared: false },
      );
      return await readKnowledgeFiles(process.cwd(), items, { confined: false });
    }
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(options.character, "utf8"));
    } catch (error) {
      throw new CliError(
        `cannot read the character file ${options.character}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const character = parseCharacter(raw);
    const characterAgentId = agentIdFor(character);
    return {
      ...(await readKnowledgeFiles(dirname(options.character), character.knowledge, {
        confined: true,
      })),
      characterAgentId,
    };
  } catch (error) {
    if (error instanceof KnowledgeFileError)
      throw new CliError(`${error.message}. Nothing was sent.`);
    if (error instanceof ValidationError) {
      const issues =
        (error.details as { issues?: Array<{ path: string; message: string }> } | undefined)
          ?.issues ?? [];
      throw new CliError(
        `${options.character} is not a valid character: ${
          issues
            .slice(0, 5)
            .map((i) => `${i.path || "(file)"}: ${i.message}`)
            .join("; ") || error.message
        }`,
      );
    }
    throw error;
  }
}

function out(value: unknown, code = 0): number {
  console.log(JSON.stringify(value, null, 2));
  return code;
}

if (import.meta.main) {
  try {
    const parsed = parseCli(process.argv.slice(2), process.env);
    if (!parsed.help) process.exitCode = await run(parsed.options);
    else if (parsed.asked) console.log(HELP);
    else {
      console.error(HELP);
      process.exitCode = 1;
    }
  } catch (error) {
    console.error(error instanceof CliError ? `error: ${error.message}` : error);
    process.exitCode = 1;
  }
}
