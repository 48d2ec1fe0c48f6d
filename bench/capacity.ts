// `npm run bench:capacity [-- --turns 200 --rooms 10]`: what the worker's D1 holds and does per
// unit of work: bytes written by table, D1 statements and round trips, for a plain turn, a turn with
// tools, a stored Gateway message, a task step and a knowledge document; then how many days a 10 GB
// database lasts at 1k, 10k and 100k turns a day and the statements a second it takes. Measures the
// tree as it is (bench/capacity/ says how); prints markdown for bench/RESULTS.md and docs/scaling.md.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startDiscordPeers } from "./capacity/discord-peers.ts";
import {
  daysRows,
  loadRows,
  type PerTurn,
  rateHeader,
  TURNS_PER_DAY,
} from "./capacity/projection.ts";
import {
  findD1Files,
  growth,
  r2ObjectBytes,
  snapshotDatabases,
  type DatabaseSnapshot,
} from "./capacity/table-bytes.ts";
import { createTripMeter, LOCAL_VECTOR_TABLE, type TripTotals } from "./capacity/trip-meter.ts";
import { capacityUnits, type Unit, type UnitContext } from "./capacity/units.ts";
import { startModelServer } from "./model-server.ts";
import { markdownTable } from "./stats.ts";
import { startBenchWorker, type BenchWorker } from "./worker-harness.ts";

const { values: flags } = parseArgs({
  options: { turns: { type: "string" }, rooms: { type: "string" } },
});
const turns = Number(flags.turns ?? 200);
const rooms = Number(flags.rooms ?? 10);
if (!Number.isInteger(turns) || turns < 1 || !Number.isInteger(rooms) || rooms < 1)
  throw new Error("bench:capacity: --turns and --rooms must be whole numbers of 1 or more");

const AGENT = "capacity";
const CHARACTER = "characters/ada.json";

interface Measured {
  unit: Unit;
  bytes: Map<string, number>;
  fileBytes: number;
  r2Bytes: number;
  trips: TripTotals;
}

// Miniflare keeps D1 in a directory under os.tmpdir() (TMPDIR): one of our own, to find its files.
const root = mkdtempSync(join(tmpdir(), "edge-agents-capacity-"));
process.env.TMPDIR = root;

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents capacity bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}, ${describeCommit()}`,
  );
  const model = await startModelServer();
  const discord = await startDiscordPeers();
  let worker: BenchWorker | null = null;
  try {
    worker = await startBenchWorker(
      {
        OPENAI_API_KEY: "bench",
        OPENAI_BASE_URL: `${model.url}/v1`,
        MODEL: "bench-model",
        ...discord.bindings,
      },
      // The recording entry: every D1 round trip and its statements, no delays added.
      { entry: "bench/latency/entry.ts" },
    );
    const context: UnitContext = {
      worker,
      model,
      discord,
      meter: createTripMeter(worker.call),
      agentId: AGENT,
    };
    await prepare(context);
    const files = findD1Files(root);
    if (files.length === 0) throw new Error(`no D1 database file under ${root}`);
    const measured: Measured[] = [];
    for (const unit of capacityUnits({ turns, rooms })) {
      console.log(`  ${unit.name}: ${unit.count} ...`);
      await context.meter.reset();
      const before = snapshotDatabases(findD1Files(root));
      const r2Before = r2ObjectBytes(root);
      await unit.run(context);
      const trips = await context.meter.take();
      const after = snapshotDatabases(findD1Files(root));
      const r2Bytes = (r2ObjectBytes(root) - r2Before) / unit.count;
      measured.push({ ...measure(unit, before, after, trips), r2Bytes });
    }
    report(measured, findD1Files(root).length);
  } finally {
    await worker?.stop();
    await discord.close();
    await model.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The agent, Discord pointed at it, the Gateway up, and one turn so one-off rows are written. */
async function prepare({ worker, model, meter }: UnitContext): Promise<void> {
  // A shipped character, so prompts (which the turn inspector records) are a real agent's size;
  // its knowledge files are left out (they are bundled at build time, not posted).
  const { knowledge: _files, ...character } = JSON.parse(readFileSync(CHARACTER, "utf8")) as Record<
    string,
    unknown
  >;
  const created = await worker.call("POST", "/agents", { ...character, id: AGENT });
  if (created.status !== 201)
    throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);
  const configured = await worker.call("POST", "/clients/discord/config", {
    defaultAgentId: AGENT,
  });
  if (configured.status !== 200)
    throw new Error(`configuring Discord failed: ${configured.status} ${await configured.text()}`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const body = (await (await fetch(`${worker.base}/health`)).json()) as {
      gateway?: { state: string };
    };
    if (body.gateway?.state === "ready") break;
    if (Date.now() > deadline) throw new Error(`the Gateway never became ready: ${body.gateway}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  model.respondWith(() => ({ text: "Hello." }));
  const warm = await worker.call("POST", `/agents/${AGENT}/messages`, {
    roomId: "warm-up",
    userId: "warm-up",
    text: "Hello there.",
  });
  if (warm.status !== 200) throw new Error(`the warm-up turn failed: ${warm.status}`);
  await meter.reset();
}

function measure(
  unit: Unit,
  before: DatabaseSnapshot,
  after: DatabaseSnapshot,
  trips: TripTotals,
): Omit<Measured, "r2Bytes"> {
  const bytes = new Map<string, number>();
  for (const [table, grown] of growth(before.tables, after.tables))
    bytes.set(table, grown / unit.count);
  return { unit, bytes, fileBytes: (after.fileBytes - before.fileBytes) / unit.count, trips };
}

/** A recorded count per unit. */
const per = (m: Measured, pick: (t: TripTotals) => number) => pick(m.trips) / m.unit.count;
/** D1 bytes per unit with the local vector index, and with Vectorize bound instead. */
const total = (m: Measured) => [...m.bytes.values()].reduce((sum, b) => sum + b, 0);
const vectorize = (m: Measured) => total(m) - (m.bytes.get(LOCAL_VECTOR_TABLE) ?? 0);

function report(measured: Measured[], databases: number): void {
  const tables = [...new Set(measured.flatMap((m) => [...m.bytes.keys()]))].sort(
    (a, b) => (measured[0]!.bytes.get(b) ?? 0) - (measured[0]!.bytes.get(a) ?? 0),
  );
  const headers = ["D1 bytes per unit", ...measured.map((m) => m.unit.name)];
  const bytesRows = [
    ...tables.map((table) => [table, ...measured.map((m) => m.bytes.get(table) ?? 0)]),
    ["**total, local vector index**", ...measured.map(total)],
    [`**total, Vectorize bound** (less ${LOCAL_VECTOR_TABLE})`, ...measured.map(vectorize)],
    ["file growth (pages, free ones too)", ...measured.map((m) => m.fileBytes)],
    ["R2 object bytes (not D1)", ...measured.map((m) => m.r2Bytes)],
  ];
  console.log(
    `\n1. D1 bytes written per unit of work, by table (indexes and full-text shadow tables under their table;`,
  );
  console.log(
    `   SQLite page bytes from dbstat, (after - before) / units, so a figure is good to about 4096 / units bytes).\n`,
  );
  console.log(markdownTable(headers, bytesRows, 0));
  console.log("\n2. D1 work per unit (statements in round trips; a batch is one round trip)\n");
  const workRows: Array<Array<string | number>> = [
    ["D1 round trips", ...measured.map((m) => per(m, (t) => t.d1Trips))],
    ["D1 statements", ...measured.map((m) => per(m, (t) => t.d1Statements))],
    [
      "D1 round trips, Vectorize bound",
      ...measured.map((m) => per(m, (t) => t.d1Trips - t.vectorOnlyTrips)),
    ],
    [
      "D1 statements, Vectorize bound",
      ...measured.map((m) => per(m, (t) => t.d1Statements - t.vectorStatements)),
    ],
    ["Durable Object calls", ...measured.map((m) => per(m, (t) => t.objectCalls))],
    ["SQL statements in objects", ...measured.map((m) => per(m, (t) => t.objectSqlStatements))],
    ["model calls", ...measured.map((m) => per(m, (t) => t.modelCalls))],
  ];
  console.log(markdownTable(["per unit", ...measured.map((m) => m.unit.name)], workRows, 1));
  console.log(`\n   Units (agent: ${CHARACTER} without its knowledge files):`);
  for (const m of measured) console.log(`   - ${m.unit.name}: ${m.unit.describe}`);
  if (databases > 1)
    console.log(
      `   ${databases} D1 databases: bytes are summed over all; statements counted on the DB binding only.`,
    );

  reportProjection(measured);
}

/** Days to 10 GB and the load a second, for the units that are turns. */
function reportProjection(measured: Measured[]): void {
  const perTurn: PerTurn[] = measured
    .filter((m) => m.unit.turn)
    .flatMap((m) => [
      {
        label: `${m.unit.name}, local vector index`,
        bytes: total(m),
        statements: per(m, (t) => t.d1Statements),
        trips: per(m, (t) => t.d1Trips),
      },
      {
        label: `${m.unit.name}, Vectorize bound`,
        bytes: vectorize(m),
        statements: per(m, (t) => t.d1Statements - t.vectorStatements),
        trips: per(m, (t) => t.d1Trips - t.vectorOnlyTrips),
      },
    ]);
  console.log("\n3. Days until one D1 database holds 10 GB, at a steady rate of turns a day\n");
  console.log(
    markdownTable(
      ["all turns are", "bytes/turn", ...TURNS_PER_DAY.map(rateHeader)],
      daysRows(perTurn),
      0,
    ),
  );
  console.log("\n4. What one database takes at that rate: D1 statements / round trips a second\n");
  console.log(
    markdownTable(["all turns are", ...TURNS_PER_DAY.map(rateHeader)], loadRows(perTurn), 1),
  );
}

/** The commit measured, and whether the working tree differs from it. */
function describeCommit(): string {
  try {
    const sha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty =
      // --no-optional-locks: status must not rewrite the index under other people's feet.
      execFileSync("git", ["--no-optional-locks", "status", "--porcelain"], {
        encoding: "utf8",
      }).trim() !== "";
    return dirty ? `working tree on top of ${sha}` : sha;
  } catch {
    return "no git";
  }
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  rmSync(root, { recursive: true, force: true });
  process.exit(1);
});
