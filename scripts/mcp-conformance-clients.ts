// `npm run mcp:conformance:client [-- --scenario <name>] [-- --out <dir>]`: runs every client
// scenario of @modelcontextprotocol/conformance against the product's MCP client
// (scripts/mcp-conformance-client.ts) and prints scenario | result | note. A scenario listed in
// scripts/mcp-conformance-client-baseline.yml is an expected failure (its comment is the note);
// the exit code is 1 on an unexpected failure or on a listed scenario that now passes.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

const ROOT = new URL("..", import.meta.url).pathname;
const SUITE_CLI = join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const BASELINE = join(ROOT, "scripts/mcp-conformance-client-baseline.yml");
const CLIENT_COMMAND = `${process.execPath} ${join(ROOT, "scripts/mcp-conformance-client.ts")}`;
/** Scenarios run side by side (each starts its own servers on free ports). */
const CONCURRENCY = 4;
const SCENARIO_TIMEOUT_MS = 30_000;

type Outcome = "pass" | "FAIL" | "expected failure" | "STALE baseline";

interface Row {
  scenario: string;
  outcome: Outcome;
  note: string;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { scenario: { type: "string", multiple: true }, out: { type: "string" } },
  });
  const out = values.out ?? (await mkdtemp(join(tmpdir(), "mcp-conformance-client-")));
  const scenarios = values.scenario ?? (await listClientScenarios());
  const baseline = parseBaseline(await readFile(BASELINE, "utf8"));
  const rows: Row[] = [];
  const queue = [...scenarios];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let name = queue.shift(); name; name = queue.shift())
        rows.push(await runScenario(name, join(out, name.replaceAll("/", "_")), baseline));
    }),
  );
  rows.sort((a, b) => scenarios.indexOf(a.scenario) - scenarios.indexOf(b.scenario));
  console.log(table(rows));
  console.log(`\nResults (checks.json, client output): ${out}`);
  const bad = rows.filter((row) => row.outcome === "FAIL" || row.outcome === "STALE baseline");
  return bad.length === 0 ? 0 : 1;
}

/** `conformance list --client`: "  - name [versions]" lines. */
async function listClientScenarios(): Promise<string[]> {
  const { stdout } = await run([SUITE_CLI, "list", "--client"]);
  return [...stdout.matchAll(/^\s+- (\S+) \[/gm)].map((match) => match[1]!);
}

/** The `client:` list of the baseline: "  - name  # why" (why kept as the note). */
function parseBaseline(text: string): Map<string, string> {
  const entries = new Map<string, string>();
  let inClient = false;
  let pendingWhy: string[] = [];
  for (const line of text.split("\n")) {
    if (/^\S/.test(line)) inClient = line.startsWith("client:");
    const comment = line.match(/^\s*#\s?(.*)$/);
    if (comment) {
      pendingWhy.push(comment[1]!);
      continue;
    }
    const item = line.match(/^\s+-\s+(\S+)\s*(?:#\s*(.*))?$/);
    if (inClient && item) {
      entries.set(item[1]!, [...pendingWhy, item[2] ?? ""].join(" ").trim());
      pendingWhy = [];
    } else if (!item) pendingWhy = [];
  }
  return entries;
}

async function runScenario(
  scenario: string,
  out: string,
  baseline: Map<string, string>,
): Promise<Row> {
  const { code } = await run([
    SUITE_CLI,
    "client",
    "--command",
    CLIENT_COMMAND,
    "--scenario",
    scenario,
    "--timeout",
    String(SCENARIO_TIMEOUT_MS),
    "-o",
    out,
  ]);
  const passed = code === 0;
  const expected = baseline.get(scenario);
  if (expected !== undefined)
    return {
      scenario,
      outcome: passed ? "STALE baseline" : "expected failure",
      note: passed ? "passes now: remove it from the baseline" : expected,
    };
  return { scenario, outcome: passed ? "pass" : "FAIL", note: passed ? "" : await whyFailed(out) };
}

/** The failed and warning checks of the scenario's checks.json, and the client's last words. */
async function whyFailed(out: string): Promise<string> {
  const dir = await findResultDir(out);
  if (!dir) return "no results written";
  const checks = JSON.parse(await readFile(join(dir, "checks.json"), "utf8")) as Array<{
    id: string;
    status: string;
  }>;
  const failed = checks
    .filter((check) => check.status === "FAILURE" || check.status === "WARNING")
    .map((check) => `${check.id} (${check.status.toLowerCase()})`);
  const stderr = (await readFile(join(dir, "stderr.txt"), "utf8").catch(() => "")).trim();
  const last = stderr.split("\n").at(-1)?.slice(0, 160);
  return [failed.join(", "), last ? `client: ${last}` : ""].filter(Boolean).join("; ");
}

async function findResultDir(dir: string): Promise<string | null> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  if (entries.some((entry) => entry.name === "checks.json")) return dir;
  for (const entry of entries)
    if (entry.isDirectory()) {
      const found = await findResultDir(join(dir, entry.name));
      if (found) return found;
    }
  return null;
}

function run(args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    // The suite stops its client at the scenario timeout; this stops the suite if it hangs too.
    const stop = setTimeout(() => child.kill(), SCENARIO_TIMEOUT_MS + 30_000);
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.resume();
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(stop);
      resolve({ code: code ?? 1, stdout });
    });
  });
}

function table(rows: Row[]): string {
  const header = ["scenario", "result", "note"];
  const cells = rows.map((row) => [row.scenario, row.outcome, row.note.replaceAll("|", "/")]);
  const widths = [0, 1].map((i) => Math.max(header[i]!.length, ...cells.map((c) => c[i]!.length)));
  const line = (cols: string[]) =>
    `| ${cols[0]!.padEnd(widths[0]!)} | ${cols[1]!.padEnd(widths[1]!)} | ${cols[2]} |`;
  const rule = `|${"-".repeat(widths[0]! + 2)}|${"-".repeat(widths[1]! + 2)}|------|`;
  return [line(header), rule, ...cells.map(line)].join("\n");
}

process.exit(await main());
