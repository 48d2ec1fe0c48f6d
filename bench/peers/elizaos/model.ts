// The in-process model for the ElizaOS driver: registered as ElizaOS's TEXT_SMALL, TEXT_LARGE and
// TEXT_EMBEDDING handlers. It answers each prompt in the format the prompt asks for, as a real
// model would (so ElizaOS never re-asks): the reply XML for the message handler, the reflection XML
// for the reflection evaluator. A prompt it does not know fails the run. By default it answers at
// once; with delays (useDelays) it waits as bench/model-server.ts does for our side, and streams
// when ElizaOS asks it to. Every call's start and end are kept for bench/compare/call-sequence.ts.
import {
  type GenerateTextParams,
  type IAgentRuntime,
  ModelType,
  type Plugin,
  type TextStreamResult,
} from "@elizaos/core";

/** The stand-in's ModelLatency (bench/model-server.ts), from the driver's COMPARE_* variables. */
export interface ModelDelays {
  embedMs: number;
  firstTokenMs: number;
  /** 0: the whole answer at once after the first token's wait. */
  tokensPerSecond: number;
}

export interface TimedCall {
  kind: "model" | "embedding";
  startMs: number;
  endMs: number;
}

let delays: ModelDelays = { embedMs: 0, firstTokenMs: 0, tokensPerSecond: 0 };
let text = 0;
let embedding = 0;
const kinds = new Map<string, number>();
const timed: TimedCall[] = [];
let open = 0;
let lastActivityMs = 0;

export function useDelays(next: ModelDelays): void {
  delays = next;
}

/** Calls so far: text generations (both sizes) and embeddings. */
export function modelCalls(): { text: number; embedding: number; kinds: Record<string, number> } {
  return { text, embedding, kinds: Object.fromEntries(kinds) };
}

/** Every call so far with its start and end (performance.now()), in the order they ended. */
export function timedCalls(): TimedCall[] {
  return timed;
}

/** Calls under way now, and when one last started or ended. */
export function activity(): { open: number; lastMs: number } {
  return { open, lastMs: lastActivityMs };
}

function started(): number {
  open += 1;
  lastActivityMs = performance.now();
  return lastActivityMs;
}

function ended(kind: TimedCall["kind"], startMs: number): void {
  open -= 1;
  lastActivityMs = performance.now();
  timed.push({ kind, startMs, endMs: lastActivityMs });
}

function answer(
  _runtime: IAgentRuntime,
  params: GenerateTextParams,
): Promise<string | TextStreamResult> {
  text += 1;
  const startMs = started();
  let reply: string;
  try {
    reply = replyTo(params.prompt);
  } catch (error) {
    ended("model", startMs);
    return Promise.reject(error);
  }
  const instant =
    delays.firstTokenMs === 0 && delays.tokensPerSecond === 0 && params.stream !== true;
  if (instant) {
    ended("model", startMs);
    return Promise.resolve(reply);
  }
  const tokens = tokensOf(reply);
  const perToken = delays.tokensPerSecond > 0 ? 1000 / delays.tokensPerSecond : 0;
  if (params.stream === true) return Promise.resolve(streamed(tokens, perToken, startMs));
  // As the stand-in answers a JSON request: the first token's wait, then the whole writing.
  return sleep(delays.firstTokenMs + tokens.length * perToken).then(() => {
    ended("model", startMs);
    return reply;
  });
}

/**
 * ElizaOS asks for a stream (`params.stream`) when the message came with onStreamChunk: the first
 * token at `firstTokenMs`, then one token each 1/tokensPerSecond, as the stand-in streams.
 */
function streamed(tokens: string[], perToken: number, startMs: number): TextStreamResult {
  let whole: (text: string) => void = () => {};
  const text = new Promise<string>((resolve) => {
    whole = resolve;
  });
  async function* textStream(): AsyncGenerator<string> {
    await sleep(delays.firstTokenMs);
    for (const [index, token] of tokens.entries()) {
      if (index > 0) await sleep(perToken);
      yield token;
    }
    ended("model", startMs);
    whole(tokens.join(""));
  }
  return {
    textStream: textStream(),
    text,
    usage: Promise.resolve(undefined),
    finishReason: Promise.resolve("stop"),
  };
}

/**
 * A model writes tags as well as words: each XML tag and each word (with the space after it) is a
 * token here. A real tokenizer makes more of a tag (`<response>` is several), so this is generous
 * to ElizaOS's XML format; the stand-in counts the words of our plain-text reply the same way.
 */
function tokensOf(reply: string): string[] {
  return reply.match(/<[^>]*>|[^<\s]+\s*|\s+/g) ?? [reply];
}

function replyTo(prompt: string): string {
  if (prompt.includes("<task>Generate dialog and actions for the character")) {
    kinds.set("reply", (kinds.get("reply") ?? 0) + 1);
    return "<response><thought>A greeting is enough.</thought><actions>REPLY</actions><providers></providers><text>Hello!</text></response>";
  }
  if (prompt.startsWith("# Task: Generate Agent Reflection")) {
    kinds.set("reflection", (kinds.get("reflection") ?? 0) + 1);
    // Numbered test messages hold nothing new: a fact already known, the DM as the relationship.
    return "<response><thought>I answered each message.</thought><facts><fact><claim>The user sends numbered messages.</claim><type>fact</type><in_bio>false</in_bio><already_known>true</already_known></fact></facts><relationships><relationship><sourceEntityId>user</sourceEntityId><targetEntityId>agent</targetEntityId><tags>dm_interaction</tags></relationship></relationships></response>";
  }
  throw new Error(`the instant model does not know this prompt: ${prompt.slice(0, 120)}`);
}

/** A 384-dimension vector (a size plugin-sql stores) from the text's characters: cheap, stable. */
function embed(_runtime: IAgentRuntime, params: unknown): Promise<number[]> {
  embedding += 1;
  const startMs = started();
  const input =
    typeof params === "string"
      ? params
      : typeof params === "object" && params !== null && "text" in params
        ? String(params.text)
        : "";
  const vector = new Array<number>(384).fill(0);
  for (let i = 0; i < input.length; i++) vector[i % 384]! += input.charCodeAt(i) / 1000;
  vector[0]! += 1;
  if (delays.embedMs === 0) {
    ended("embedding", startMs);
    return Promise.resolve(vector);
  }
  return sleep(delays.embedMs).then(() => {
    ended("embedding", startMs);
    return vector;
  });
}

function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve();
}

export const instantModelPlugin: Plugin = {
  name: "instant-model",
  description: "Answers in the format each prompt asks for, at once or after the bench's delays.",
  priority: 100,
  models: {
    [ModelType.TEXT_SMALL]: answer,
    [ModelType.TEXT_LARGE]: answer,
    [ModelType.TEXT_EMBEDDING]: embed,
  },
};
