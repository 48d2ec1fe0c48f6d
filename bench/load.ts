// `npm run bench:load`: the worker in local workerd under concurrent load, with a model that
// answers at once by echoing a marker from the message. Checked from the stored history, not from
// the responses alone: every message must have exactly one reply, right after it (a room answers
// one turn at a time, in arrival order), and nothing may be lost or answered twice.
// 1. 100 turns sent at once into one room. 2. 2,000 turns across 100 rooms, 50 in flight.
// 3. 50 pairs of identical requests with the same Idempotency-Key, each pair sent at once.
import { cpus } from "node:os";
import { startModelServer } from "./model-server.ts";
import { markdownTable, summarize } from "./stats.ts";
import { startBenchWorker, type Call } from "./worker-harness.ts";

const AGENT = "load-bench";

interface Outcome {
  ms: number;
  status: number;
  code?: string;
  replyText?: string;
  turnId?: string;
}

interface Check {
  lost: number;
  duplicated: number;
  outOfOrder: number;
}

async function main(): Promise<void> {
  const cpu = cpus();
  console.log(
    `\nedge-agents load bench: ${cpu[0]?.model ?? "unknown CPU"} x${cpu.length}, Node ${process.version}`,
  );
  const model = await startModelServer();
  // The reply names the message it answers, so the history shows which reply belongs where.
  model.respondWith((call) => {
    const users = call.messages.filter((m) => m.role === "user");
    const text = String(users.at(-1)?.content ?? "");
    const marker = /msg-[\w-]+/.exec(text)?.[0] ?? "none";
    return { text: `re ${marker}` };
  });
  const worker = await startBenchWorker({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "bench-model",
  });
  try {
    const created = await worker.call("POST", "/agents", {
      id: AGENT,
      name: "Load",
      bio: ["A load-test agent."],
      settings: { memory: { factsEvery: 1000, summarizeAfter: 10000 } },
    });
    if (created.status !== 201)
      throw new Error(`creating the agent failed: ${created.status} ${await created.text()}`);
    const rows: Array<Array<string | number>> = [];

    // 1. One room, 100 at once.
    {
      const started = performance.now();
      const outcomes = await Promise.all(
        Array.from({ length: 100 }, (_, i) => send(worker.call, "one-room", `msg-a${i}`)),
      );
      const wall = performance.now() - started;
      const check = await checkRooms(
        worker.call,
        new Map([["one-room", outcomes.map((_, i) => `msg-a${i}`)]]),
      );
      rows.push(row("100 at once, one room", 100, 100, wall, outcomes, check));
    }

    // 2. 100 rooms, 2,000 turns, 50 in flight.
    {
      const jobs = Array.from({ length: 2_000 }, (_, i) => ({
        room: `room-${i % 100}`,
        marker: `msg-b${i}`,
      }));
      const outcomes: Outcome[] = [];
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: 50 }, async () => {
          while (next < jobs.length) {
            const job = jobs[next++]!;
            outcomes.push(await send(worker.call, job.room, job.marker));
          }
        }),
      );
      const wall = performance.now() - started;
      const expected = new Map<string, string[]>();
      for (const job of jobs)
        expected.set(job.room, [...(expected.get(job.room) ?? []), job.marker]);
      const check = await checkRooms(worker.call, expected);
      rows.push(row("2,000 across 100 rooms", 2_000, 50, wall, outcomes, check));
    }

    // 3. Duplicate requests racing with one Idempotency-Key.
    {
      const started = performance.now();
      const pairs = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const key = `key-${i}`;
          return Promise.all([
            send(worker.call, "idem-room", `msg-c${i}`, key),
            send(worker.call, "idem-room", `msg-c${i}`, key),
          ]);
        }),
      );
      const wall = performance.now() - started;
      const outcomes = pairs.flat();
      const check = await checkRooms(
        worker.call,
        new Map([["idem-room", pairs.map((_, i) => `msg-c${i}`)]]),
      );
      const mismatched = pairs.filter(
        ([a, b]) => a!.turnId !== b!.turnId || a!.replyText !== b!.replyText,
      ).length;
      rows.push(
        row("50 Idempotency-Key pairs racing", 100, 100, wall, outcomes, {
          ...check,
          duplicated: check.duplicated + mismatched,
        }),
      );
    }

    console.log(
      "\nTurns through the worker in local workerd (Miniflare; D1 and Durable Objects local), model stand-in answering",
    );
    console.log(
      "at once over loopback. Lost: a message without a stored reply, or a request that did not get one. Duplicated:",
    );
    console.log(
      "a message answered (or stored) twice; for the key pairs, also two different answers. Out of order: a reply not",
    );
    console.log("right after its message in the room's history.\n");
    console.log(
      markdownTable(
        [
          "scenario",
          "turns",
          "in flight",
          "wall s",
          "turns/s",
          "p50 ms",
          "p99 ms",
          "errors",
          "lost",
          "duplicated",
          "out of order",
        ],
        rows,
        [0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0],
      ),
    );
  } finally {
    await worker.stop();
    await model.close();
  }
}

function row(
  name: string,
  turns: number,
  inFlight: number,
  wallMs: number,
  outcomes: Outcome[],
  check: Check,
): Array<string | number> {
  const latency = summarize(outcomes.map((o) => o.ms));
  const errors = outcomes.filter((o) => o.status !== 200);
  const codes = [...new Set(errors.map((o) => `${o.status} ${o.code ?? ""}`.trim()))];
  if (codes.length > 0) console.log(`  ${name}: errors ${codes.join(", ")}`);
  return [
    name,
    turns,
    inFlight,
    wallMs / 1000,
    turns / (wallMs / 1000),
    latency.p50,
    latency.p99,
    errors.length,
    check.lost,
    check.duplicated,
    check.outOfOrder,
  ];
}

async function send(
  call: Call,
  roomId: string,
  marker: string,
  idempotencyKey?: string,
): Promise<Outcome> {
  const started = performance.now();
  const headers: Record<string, string> = idempotencyKey
    ? { "idempotency-key": idempotencyKey }
    : {};
  const response = await call(
    "POST",
    `/agents/${AGENT}/messages`,
    { roomId, userId: `user-${roomId}`, text: `hello ${marker}` },
    headers,
  );
  const body = (await response.json()) as {
    turnId?: string;
    reply?: { text: string };
    error?: { code: string };
  };
  return {
    ms: performance.now() - started,
    status: response.status,
    code: body.error?.code,
    replyText: body.reply?.text,
    turnId: body.turnId,
  };
}

/** Reads each room's whole history and checks every expected message against it. */
async function checkRooms(call: Call, expected: Map<string, string[]>): Promise<Check> {
  const check: Check = { lost: 0, duplicated: 0, outOfOrder: 0 };
  for (const [room, markers] of expected) {
    const history = await readAll(call, room);
    for (const marker of markers) {
      const asked = history.filter((m) => m.role === "user" && m.text === `hello ${marker}`);
      const answers = history
        .map((m, i) => ({ m, i }))
        .filter(({ m }) => m.role === "agent" && m.text === `re ${marker}`);
      if (answers.length === 0 || asked.length === 0) check.lost += 1;
      if (answers.length > 1 || asked.length > 1) check.duplicated += 1;
      const at = history.findIndex((m) => m.role === "user" && m.text === `hello ${marker}`);
      if (at >= 0 && history[at + 1]?.text !== `re ${marker}`) check.outOfOrder += 1;
    }
  }
  return check;
}

async function readAll(call: Call, room: string): Promise<Array<{ role: string; text: string }>> {
  const all: Array<{ role: string; text: string; createdAt: number }> = [];
  let before: number | null = null;
  do {
    const response = await call(
      "GET",
      `/agents/${AGENT}/rooms/${room}/messages?limit=200${before ? `&before=${before}` : ""}`,
    );
    const page = (await response.json()) as {
      messages: Array<{ role: string; text: string; createdAt: number }>;
      nextBefore: number | null;
    };
    all.push(...page.messages);
    before = page.nextBefore;
  } while (before);
  // Pages are newest first.
  return all.reverse();
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.stack : String(error)}`);
  process.exit(1);
});
