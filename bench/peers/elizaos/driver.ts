// ElizaOS 1.7.2's real runtime in this process (AgentRuntime + plugin-sql on in-memory PGlite +
// plugin-bootstrap), one user DMing the agent through ElizaOS.handleMessage, the path its server
// takes, with an instant in-process model (model.ts). Run by bench/compare.ts as a child process;
// writes one JSON result (per-message figures after warm-up) to the path given as its argument.
// With COMPARE_EMBED_MS, COMPARE_FIRST_TOKEN_MS or COMPARE_TOKENS_PER_S the model waits as our
// stand-in does, each message is sent once the last one's work is done, and a second DM room
// times the reply's first streamed chunk (handleMessage's onStreamChunk).
import { writeFileSync } from "node:fs";
import {
  AgentRuntime,
  type Character,
  ChannelType,
  type Content,
  createUniqueUuid,
  ElizaOS,
  stringToUuid,
  type UUID,
} from "@elizaos/core";
import bootstrapPlugin from "@elizaos/plugin-bootstrap";
import sqlPlugin, { createDatabaseAdapter } from "@elizaos/plugin-sql";
import {
  activity,
  instantModelPlugin,
  modelCalls,
  type ModelDelays,
  timedCalls,
  useDelays,
} from "./model.ts";
import { countStatements, statementCount } from "./sql-count.ts";

const out = process.argv[2];
const turns = Number(process.env.COMPARE_TURNS ?? 200);
const warmup = Number(process.env.COMPARE_WARMUP ?? 20);
const delays: ModelDelays = {
  embedMs: Number(process.env.COMPARE_EMBED_MS ?? 0),
  firstTokenMs: Number(process.env.COMPARE_FIRST_TOKEN_MS ?? 0),
  tokensPerSecond: Number(process.env.COMPARE_TOKENS_PER_S ?? 0),
};
const delayed = delays.embedMs > 0 || delays.firstTokenMs > 0 || delays.tokensPerSecond > 0;
/** As bench/compare/delays.ts SETTLE_QUIET_MS: no model call open, none for this long. */
const SETTLE_QUIET_MS = 250;

const character: Character = {
  name: "Bench",
  bio: ["A benchmark agent."],
  system: "You are Bench.",
};

interface Sample {
  /** performance.now() when the message was handed to ElizaOS. */
  sentMs: number;
  replyMs: number;
  doneMs: number;
  /** Only when the message asked for a stream. */
  firstChunkMs?: number;
}

async function main(): Promise<void> {
  useDelays(delays);
  // As ElizaOS's server does: the schema migrated before the agent starts (1.7.2's initialize
  // reads the agents table before it migrates). In-memory PGlite, as the workerd side runs D1
  // and Durable Objects in memory.
  const agentId = stringToUuid(character.name);
  const adapter = createDatabaseAdapter({ dataDir: "memory://" }, agentId);
  await adapter.init();
  await adapter.runPluginMigrations([{ name: sqlPlugin.name, schema: sqlPlugin.schema }], {
    verbose: false,
  });
  const runtime = new AgentRuntime({
    agentId,
    character,
    adapter,
    plugins: [sqlPlugin, bootstrapPlugin, instantModelPlugin],
  });
  await runtime.initialize({ skipMigrations: true });
  countStatements();
  const eliza = new ElizaOS();
  eliza.registerAgent(runtime);

  const userId = stringToUuid("bench-user");
  const roomId = stringToUuid("bench-dm-room");
  const samples: Sample[] = [];
  let sql = 0;
  let model = modelCalls();
  let cpu = process.cpuUsage();
  for (let i = 0; i < warmup + turns; i++) {
    if (i === warmup) {
      await drained();
      // Counted from here: everything the measured messages cause, after-reply work included.
      sql = statementCount();
      model = modelCalls();
      cpu = process.cpuUsage();
    }
    if (delayed) await settled();
    const sample = await dm(eliza, runtime, userId, roomId, `message ${i}`);
    if (i >= warmup) samples.push(sample);
  }
  // The embedding queue works in the background: let it drain so its cost is in the figures.
  await drained();
  const used = process.cpuUsage(cpu);
  const after = modelCalls();
  const sqlPerMessage = (statementCount() - sql) / turns;
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  // Under delays: the same DM streamed, in a room of its own so the first keeps its history.
  const firstChunkMs: number[] = [];
  if (delayed) {
    const streamRoom = stringToUuid("bench-dm-stream-room");
    for (let i = 0; i < warmup + turns; i++) {
      await settled();
      const sample = await dm(eliza, runtime, userId, streamRoom, `message ${i}`, true);
      if (i >= warmup) firstChunkMs.push(sample.firstChunkMs ?? Number.NaN);
    }
  }
  writeFileSync(
    out!,
    JSON.stringify({
      turns,
      replyMs: samples.map((s) => s.replyMs),
      doneMs: samples.map((s) => s.doneMs),
      cpuMsPerMessage: (used.user + used.system) / 1000 / turns,
      modelCallsPerMessage: (after.text - model.text) / turns,
      embeddingCallsPerMessage: (after.embedding - model.embedding) / turns,
      sqlPerMessage,
      // Text generations by prompt, over the measured messages.
      modelCallKinds: Object.fromEntries(
        Object.entries(after.kinds).map(([kind, n]) => [kind, n - (model.kinds[kind] ?? 0)]),
      ),
      rssMb,
      ...(delayed
        ? {
            timedTurns: samples.map((s) => ({ sentMs: s.sentMs, repliedMs: s.sentMs + s.replyMs })),
            calls: timedCalls(),
            firstTokenMs: firstChunkMs,
          }
        : {}),
    }),
  );
  await runtime.stop();
}

/**
 * One DM: resolves when the agent has answered (reply) and finished with the message (done). With
 * `stream`, ElizaOS streams the reply's text to onStreamChunk as its model writes it.
 */
function dm(
  eliza: ElizaOS,
  runtime: AgentRuntime,
  entityId: UUID,
  roomId: UUID,
  text: string,
  stream = false,
): Promise<Sample> {
  const started = performance.now();
  let replyMs = Number.NaN;
  let firstChunkMs: number | undefined;
  return new Promise((resolve, reject) => {
    eliza
      .handleMessage(
        runtime,
        { entityId, roomId, content: { text, source: "bench", channelType: ChannelType.DM } },
        {
          ...(stream
            ? {
                onStreamChunk: async (chunk: string) => {
                  if (chunk && firstChunkMs === undefined)
                    firstChunkMs = performance.now() - started;
                },
              }
            : {}),
          // As ElizaOS's platform clients do in their callback: the reply is sent (here: timed),
          // then stored as the agent's message, so the agent remembers what it said.
          onResponse: async (content: Content) => {
            if (!content.text) return;
            if (Number.isNaN(replyMs)) replyMs = performance.now() - started;
            await runtime.createMemory(
              {
                id: createUniqueUuid(runtime, `reply-${text}`),
                entityId: runtime.agentId,
                agentId: runtime.agentId,
                roomId,
                content: { ...content, source: "bench", channelType: ChannelType.DM },
                createdAt: Date.now(),
              },
              "messages",
            );
          },
          onComplete: async () => {
            if (Number.isNaN(replyMs)) reject(new Error(`no reply to "${text}"`));
            else
              resolve({
                sentMs: started,
                replyMs,
                doneMs: performance.now() - started,
                ...(firstChunkMs === undefined ? {} : { firstChunkMs }),
              });
          },
          onError: async (error: Error) => reject(error),
        },
      )
      .catch(reject);
  });
}

/** Waits until no model call is open and none has started or ended for SETTLE_QUIET_MS. */
async function settled(): Promise<void> {
  const deadline = performance.now() + 15_000;
  for (;;) {
    const { open, lastMs } = activity();
    if (
      (open === 0 && performance.now() - lastMs >= SETTLE_QUIET_MS) ||
      performance.now() > deadline
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until no embedding has been made for half a second (the queue works on a timer). */
async function drained(): Promise<void> {
  let quiet = 0;
  let last = modelCalls().embedding;
  for (let i = 0; i < 200 && quiet < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = modelCalls().embedding;
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`elizaos driver failed: ${error instanceof Error ? error.stack : String(error)}`);
    process.exit(1);
  },
);
