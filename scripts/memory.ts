// `npm run memory -- <command>`: inspect and manage an agent's long-term memory over the HTTP API,
// against the local dev server (token read from .dev.vars) or a deployed worker (--url, --token).
// Commands: list, similar, clear, stats, init. Tables fit the terminal; --json prints raw answers.
import { existsSync, readFileSync } from "node:fs";

const HELP = `Usage: npm run memory -- <command> [options]

Commands:
  list     --agent A [--room R] [--user U] [--type T] [--limit N]   newest memories first
  similar  "query" --agent A [--type T] [--room R] [--user U] [--threshold X] [--limit N]
  clear    --agent A [--room R] [--user U] [--type T] --yes          delete (vectors too)
  stats    --agent A                                                  counts, backlog, backends
  init     --agent A                                                  check dimensions, embed what waits

Options:
  --url URL      worker URL (default $EDGE_AGENTS_URL or http://localhost:8787)
  --token T      API token (default $EDGE_AGENTS_TOKEN, else ADMIN_TOKEN from .dev.vars for a local URL)
  --json         print the raw JSON answers
  --help         this text

Types: message, fact, description, lore, document, fragment, summary (comma-separate several).`;

interface Options {
  command: string | undefined;
  positional: string[];
  flags: Map<string, string | true>;
}

class CliError extends Error {}

function parse(argv: string[]): Options {
  const flags = new Map<string, string | true>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith("--")) {
      const next = argv[i + 1];
      if (["--yes", "--json", "--help"].includes(arg) || next === undefined || next.startsWith("--")) flags.set(arg.slice(2), true);
      else {
        flags.set(arg.slice(2), next);
        i++;
      }
    } else positional.push(arg);
  }
  return { command: positional.shift(), positional, flags };
}

const options = parse(process.argv.slice(2));
const text = (name: string): string | undefined => {
  const value = options.flags.get(name);
  if (value === true) throw new CliError(`--${name} needs a value`);
  return value;
};
const required = (name: string): string => {
  const value = text(name);
  if (!value) throw new CliError(`--${name} is required (see --help)`);
  return value;
};

const baseUrl = (text("url") ?? process.env.EDGE_AGENTS_URL ?? "http://localhost:8787").replace(/\/+$/, "");

function token(): string {
  const given = text("token") ?? process.env.EDGE_AGENTS_TOKEN;
  if (given) return given;
  const local = /^https?:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/.test(baseUrl);
  if (local && existsSync(".dev.vars")) {
    const match = /^\s*ADMIN_TOKEN\s*=\s*"?([^"\n]+)"?\s*$/m.exec(readFileSync(".dev.vars", "utf8"));
    if (match?.[1]) return match[1];
  }
  throw new CliError("no API token: pass --token or set EDGE_AGENTS_TOKEN (for a local server, run `npm run dev` once to create .dev.vars)");
}

async function request(method: string, path: string, body?: unknown): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token()}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new CliError(`cannot reach ${baseUrl}: is \`npm run dev\` running (or is --url right)?`);
  }
  const raw = await response.text();
  let parsed: unknown;
  try {
    parsed = raw ? JSON.parse(raw) : null;
  } catch {
    throw new CliError(`${method} ${path}: HTTP ${response.status}, not JSON`);
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | null)?.error;
    throw new CliError(`${method} ${path}: HTTP ${response.status} ${error?.code ?? ""}: ${error?.message ?? raw.slice(0, 200)}`);
  }
  return parsed;
}

function query(params: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) search.set(key, value);
  return search.toString();
}

interface MemoryView {
  id: string;
  type: string;
  roomId: string | null;
  userId: string | null;
  text: string;
  createdAt: number;
  embedded: boolean;
  score?: number;
  similarity?: number | null;
  matchedBy?: string[];
}

function printTable(headers: string[], rows: string[][]): void {
  const width = process.stdout.columns && process.stdout.columns > 40 ? process.stdout.columns : 120;
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  // The last column (the text) takes what is left of the terminal.
  const fixed = widths.slice(0, -1).reduce((a, b) => a + b + 2, 0);
  widths[widths.length - 1] = Math.max(10, Math.min(widths[widths.length - 1]!, width - fixed));
  const cut = (value: string, w: number) => (value.length > w ? `${value.slice(0, w - 1)}…` : value.padEnd(w));
  const line = (cells: string[]) => cells.map((c, i) => cut(c.replace(/\s+/g, " "), widths[i]!)).join("  ").trimEnd();
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");

async function main(): Promise<void> {
  if (options.flags.has("help") || !options.command) {
    console.log(HELP);
    return;
  }
  const json = options.flags.has("json");
  switch (options.command) {
    case "list": {
      const agentId = required("agent");
      const body = (await request("GET", `/memories?${query({ agentId, roomId: text("room"), userId: text("user"), type: text("type"), limit: text("limit") ?? "50" })}`)) as {
        memories: MemoryView[];
        nextCursor: string | null;
      };
      if (json) return console.log(JSON.stringify(body, null, 2));
      printTable(
        ["created", "type", "room", "user", "vec", "text"],
        body.memories.map((m) => [day(m.createdAt), m.type, m.roomId ?? "", m.userId ?? "", m.embedded ? "yes" : "no", m.text]),
      );
      if (body.nextCursor) console.log(`(more: the API's cursor is ${body.nextCursor})`);
      return;
    }
    case "similar": {
      const agentId = required("agent");
      const q = options.positional.join(" ").trim();
      if (!q) throw new CliError('give the query text, e.g. npm run memory -- similar "where does Alice live" --agent ada');
      const type = text("type");
      const threshold = text("threshold");
      const body = (await request("POST", "/memories/similar", {
        agentId,
        query: q,
        ...(type ? { type: type.includes(",") ? type.split(",") : type } : {}),
        ...(text("room") ? { roomId: text("room") } : {}),
        ...(text("user") ? { userId: text("user") } : {}),
        ...(threshold ? { threshold: Number(threshold) } : {}),
        limit: Number(text("limit") ?? "10"),
      })) as { memories: MemoryView[] };
      if (json) return console.log(JSON.stringify(body, null, 2));
      printTable(
        ["score", "sim", "by", "type", "user", "text"],
        body.memories.map((m) => [m.score?.toFixed(3) ?? "", m.similarity === null || m.similarity === undefined ? "-" : m.similarity.toFixed(3), (m.matchedBy ?? []).join("+"), m.type, m.userId ?? "", m.text]),
      );
      return;
    }
    case "clear": {
      const agentId = required("agent");
      const filter = { agentId, roomId: text("room"), userId: text("user"), type: text("type") };
      if (!options.flags.has("yes")) {
        const stats = (await request("GET", `/memories/stats?${query({ agentId })}`)) as { total: number };
        const scope = [filter.roomId && `room ${filter.roomId}`, filter.userId && `user ${filter.userId}`, filter.type && `type ${filter.type}`].filter(Boolean).join(", ");
        throw new CliError(`this deletes ${scope ? `the memories of ${scope}` : `all ${stats.total} memories`} of agent ${agentId}, with their vectors; add --yes to do it`);
      }
      const body = (await request("DELETE", `/memories?${query(filter)}`)) as { deleted: number };
      if (json) return console.log(JSON.stringify(body));
      console.log(`deleted ${body.deleted} memories`);
      return;
    }
    case "stats": {
      const agentId = required("agent");
      const body = (await request("GET", `/memories/stats?${query({ agentId })}`)) as {
        total: number;
        byType: Record<string, number>;
        pendingEmbedding: number;
        embedder: { backend: string; id: string; dimensions: number };
        vectors: { backend: string; dimensions: number | null };
      };
      if (json) return console.log(JSON.stringify(body, null, 2));
      printTable(["type", "count"], [...Object.entries(body.byType).map(([type, n]) => [type, String(n)]), ["total", String(body.total)]]);
      console.log(`\nwaiting for a vector: ${body.pendingEmbedding}`);
      console.log(`embedder: ${body.embedder.id} (${body.embedder.backend}, ${body.embedder.dimensions} dims)`);
      console.log(`vector index: ${body.vectors.backend}, ${body.vectors.dimensions ?? "no"} dims`);
      return;
    }
    case "init": {
      const agentId = required("agent");
      const health = (await (await fetch(`${baseUrl}/health`).catch(() => {
        throw new CliError(`cannot reach ${baseUrl}: is \`npm run dev\` running (or is --url right)?`);
      })).json()) as { embedding?: { id: string; dimensions: number }; vectors?: { backend: string; dimensions: number | null; status: string } };
      if (!health.embedding || !health.vectors) throw new CliError("this server predates long-term memory (no embedding info in /health)");
      console.log(`embedder ${health.embedding.id}: ${health.embedding.dimensions} dims; ${health.vectors.backend} index: ${health.vectors.dimensions ?? "not sized yet"}`);
      if (health.vectors.status === "dimension_mismatch") {
        throw new CliError("the embedder and the vector index disagree on the dimension: fix EMBEDDING_MODEL/EMBEDDING_DIMENSIONS or create a new index (README, Memory)");
      }
      let total = 0;
      for (;;) {
        const body = (await request("POST", "/memories/embed", { agentId })) as { embedded: number; pending: boolean };
        total += body.embedded;
        process.stdout.write(`\rembedded ${total}${body.pending ? " ..." : ""}   `);
        if (!body.pending) break;
      }
      console.log(`\ndone: every memory of ${agentId} has a vector`);
      return;
    }
    default:
      throw new CliError(`unknown command "${options.command}" (see --help)`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof CliError ? `error: ${error.message}` : error);
  process.exit(1);
});
