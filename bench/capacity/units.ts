// The units of work bench:capacity measures, each driven through the worker's public surfaces as a
// user would: a plain turn and a two-tool turn (REST), chatter on a Discord server the bot is in
// (Gateway, stored and not answered), one act step of a three-step task, and a knowledge document.
// Each `run` returns once the worker has finished the work, after-reply work included.
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
  type TaskScript,
} from "../../test/helpers/task-script.ts";
import type { ModelServer } from "../model-server.ts";
import type { BenchWorker } from "../worker-harness.ts";
import { chatterText, type DiscordPeers } from "./discord-peers.ts";
import type { TripMeter } from "./trip-meter.ts";

export interface UnitContext {
  worker: BenchWorker;
  model: ModelServer;
  discord: DiscordPeers;
  meter: TripMeter;
  agentId: string;
}

export interface Unit {
  name: string;
  /** How many units a run makes (turns, messages, act steps, documents). */
  count: number;
  /** What one unit is, for the notes under the table. */
  describe: string;
  /** A chat turn: projected to turns a day. */
  turn: boolean;
  run(context: UnitContext): Promise<void>;
}

export interface UnitSizes {
  turns: number;
  rooms: number;
}

/** Rooms the turns spread over and people talking in them. */
const USERS = 10;
const TASK_STEPS = 3;
/** A knowledge document of about 8,000 characters (a few pages). */
const DOCUMENT_CHARS = 8_000;
const USER_TEXT =
  "Could you remind me what we decided about the venue for Saturday, and whether Sam is bringing the projector?";
const REPLY_TEXT =
  "We settled on the community hall on Elm Street for Saturday at 7 pm. Sam said he would bring the projector and a spare cable; I will remind him on Friday morning.";

export function capacityUnits({ turns, rooms }: UnitSizes): Unit[] {
  const tasks = Math.max(1, Math.round(turns / 20));
  const documents = Math.max(1, Math.round(turns / 20));
  const toolTurns = Math.max(1, Math.round(turns / 2));
  return [
    {
      name: "plain turn",
      count: turns,
      turn: true,
      describe: `REST turn, ${USER_TEXT.length}-character message, ${REPLY_TEXT.length}-character reply, ${turns} turns over ${rooms} rooms and ${USERS} people`,
      run: (context) => {
        context.model.respondWith(() => ({ text: REPLY_TEXT }));
        return chatTurns(context, turns, (i) => `plain-${i % rooms}`);
      },
    },
    {
      name: "turn with tools",
      count: toolTurns,
      turn: true,
      describe: `as a plain turn, but the model calls two tools first (current_time, list_available_tools): 3 model calls; ${toolTurns} turns over ${rooms} rooms`,
      run: (context) => {
        twoToolScript(context.model);
        return chatTurns(context, toolTurns, (i) => `tools-${i % rooms}`);
      },
    },
    {
      name: "Gateway message, stored",
      count: turns,
      turn: false,
      describe: `a ${chatterText(100).length}-character Discord message that mentions nobody, in a server channel the bot is in: stored, not answered; ${turns} over ${rooms} channels`,
      run: (context) => gatewayChatter(context, turns, rooms),
    },
    {
      name: "task step",
      count: tasks * TASK_STEPS,
      turn: false,
      describe: `one act step of a ${TASK_STEPS}-step task with two tool calls (the task's plan, reflections, summary and completion check shared out over its steps); ${tasks} task${tasks === 1 ? "" : "s"}`,
      run: (context) => runTasks(context, tasks),
    },
    {
      name: "knowledge document",
      count: documents,
      turn: false,
      describe: `a ${DOCUMENT_CHARS.toLocaleString("en")}-character text document ingested through POST /agents/:id/knowledge (chunked, embedded); ${documents} document${documents === 1 ? "" : "s"}`,
      run: (context) => ingestDocuments(context, documents),
    },
  ];
}

async function chatTurns(
  { worker, agentId }: UnitContext,
  turns: number,
  room: (i: number) => string,
): Promise<void> {
  for (let i = 0; i < turns; i++) {
    const response = await worker.call("POST", `/agents/${agentId}/messages`, {
      roomId: room(i),
      userId: `person-${i % USERS}`,
      text: `${USER_TEXT} (${i})`,
    });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`a turn failed: ${response.status} ${body}`);
  }
}

function twoToolScript(model: ModelServer): void {
  let round = 0;
  model.respondWith(() => {
    round = (round + 1) % 3;
    if (round === 1)
      return { toolCalls: [{ name: "current_time", arguments: { timeZone: "UTC" } }] };
    if (round === 2) return { toolCalls: [{ name: "list_available_tools", arguments: {} }] };
    return { text: REPLY_TEXT };
  });
}

/** Waits on /health's count of events handed to rooms, then for the rooms to finish with them. */
async function gatewayChatter(
  { worker, discord, meter }: UnitContext,
  count: number,
  channels: number,
): Promise<void> {
  const start = await eventsHandled(worker);
  await discord.dispatchChatter(count, channels);
  const deadline = Date.now() + 120_000;
  // Idle first, then one /health read: its own D1 reads land in the next phase's discarded trips
  // unless the events are still arriving (then the wait goes on and they count here).
  for (;;) {
    await meter.collect(1_000);
    if ((await eventsHandled(worker)) - start >= count) return;
    if (Date.now() > deadline) throw new Error("the Gateway messages were never handed to rooms");
  }
}

async function eventsHandled(worker: BenchWorker): Promise<number> {
  const body = (await (await fetch(`${worker.base}/health`)).json()) as {
    gateway?: { eventsHandled: number };
  };
  if (!body.gateway) throw new Error("/health shows no Gateway: is DISCORD_GATEWAY on?");
  return body.gateway.eventsHandled;
}

const TASK_SCRIPT: TaskScript = {
  plan: [planReply(["Check the time", "List the tools", "Write the note"], ["The note says when"])],
  act: [
    { toolCalls: [{ name: "current_time", arguments: {} }] },
    { text: "It is noon." },
    { toolCalls: [{ name: "list_available_tools", arguments: {} }] },
    { text: "Four tools." },
    { text: "Noon; four tools." },
  ],
  reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
  summary: [{ text: "Time, tools, note." }],
  evaluate: [evaluateReply([true], "Noon; four tools.")],
};

const FINISHED = ["completed", "failed", "exhausted", "cancelled"];

async function runTasks({ worker, model, meter, agentId }: UnitContext, tasks: number) {
  for (let i = 0; i < tasks; i++) {
    model.respondWith(standInResponder(scriptTask(TASK_SCRIPT)));
    const created = await worker.call("POST", `/agents/${agentId}/tasks`, {
      goal: `Tell me the time and how many tools you have (${i})`,
    });
    if (created.status !== 201 && created.status !== 202)
      throw new Error(`creating a task failed: ${created.status} ${await created.text()}`);
    const { taskId } = (await created.json()) as { taskId: string };
    const deadline = Date.now() + 60_000;
    for (;;) {
      // Idle before each look, so the polls' own reads stay few.
      await meter.collect();
      const state = (await (
        await worker.call("GET", `/agents/${agentId}/tasks/${taskId}`)
      ).json()) as { status: string; report?: string };
      if (state.status === "completed") break;
      if (FINISHED.includes(state.status))
        throw new Error(`a bench task ended ${state.status}: ${state.report}`);
      if (Date.now() > deadline) throw new Error(`a bench task never finished (${state.status})`);
    }
  }
}

async function ingestDocuments({ worker, agentId }: UnitContext, documents: number) {
  for (let i = 0; i < documents; i++) {
    const response = await worker.call("POST", `/agents/${agentId}/knowledge`, {
      title: `Handbook chapter ${i}`,
      text: documentText(i, DOCUMENT_CHARS),
      format: "text",
    });
    if (response.status !== 201)
      throw new Error(`ingesting a document failed: ${response.status} ${await response.text()}`);
  }
}

const WORDS =
  "venue projector schedule budget member meeting volunteer ticket garden library council river bridge market festival harvest lantern station museum workshop recipe kettle orchard ferry harbour".split(
    " ",
  );

/** Sentences of words picked by a small linear congruential generator: the same text every run. */
function documentText(seed: number, chars: number): string {
  let state = (seed + 1) * 2_654_435_761;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state;
  };
  const sentences: string[] = [];
  let length = 0;
  while (length < chars) {
    const words = Array.from({ length: 8 + (next() % 10) }, () => WORDS[next() % WORDS.length]!);
    const sentence = `${words.join(" ")} ${next() % 1000}.`;
    sentences.push(sentence.charAt(0).toUpperCase() + sentence.slice(1));
    length += sentence.length + 1;
  }
  return sentences.join(" ").slice(0, chars);
}
