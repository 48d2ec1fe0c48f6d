// The "burst of 20 turns in one room" row of `npm run bench`: isolated turns in a room (each sent
// after the previous reply and after a pause that lets its after-reply work finish), then bursts of
// 20 turns sent at once to another room. Each burst reply's latency (from its send) and the gap
// between consecutive replies (a turn's service time inside the burst) are set against the
// isolated turn's latency: issue 28 asks that evaluators never make a later turn wait.
import { summarize, type Summary } from "./stats.ts";
import type { Call } from "./worker-harness.ts";

export const BURST_SIZE = 20;
const BURSTS = 5;
const ISOLATED = 40;
/** After a turn or a burst: long enough for its after-reply work (evaluators, embeddings) to end. */
const SETTLE_MS = 300;

export interface BurstResult {
  isolated: Summary;
  /** Every burst reply's latency from its own send. */
  reply: Summary;
  /** The time between consecutive replies of a burst (the first reply's latency for the first). */
  gap: Summary;
  /** The slowest reply of each burst (the burst's span). */
  last: Summary;
}

type SendTurn = (roomId: string, text: string) => Promise<{ ms: number }>;

export async function runBurstBench(send: SendTurn): Promise<BurstResult> {
  const isolated: number[] = [];
  for (let i = 0; i < 5 + ISOLATED; i++) {
    const { ms } = await send("isolated-room", `isolated message ${i}`);
    if (i >= 5) isolated.push(ms);
    await sleep(SETTLE_MS);
  }
  const replies: number[] = [];
  const gaps: number[] = [];
  const lasts: number[] = [];
  for (let b = 0; b < 1 + BURSTS; b++) {
    const started = performance.now();
    const done = await Promise.all(
      Array.from({ length: BURST_SIZE }, async (_, i) => {
        const { ms } = await send("burst-room", `burst ${b} message ${i}`);
        return { ms, at: performance.now() - started };
      }),
    );
    await sleep(SETTLE_MS * 3);
    if (b === 0) continue; // warm-up burst
    replies.push(...done.map((d) => d.ms));
    const order = done.map((d) => d.at).sort((x, y) => x - y);
    for (let i = 0; i < order.length; i++) gaps.push(order[i]! - (order[i - 1] ?? 0));
    lasts.push(order[order.length - 1]!);
  }
  return {
    isolated: summarize(isolated),
    reply: summarize(replies),
    gap: summarize(gaps),
    last: summarize(lasts),
  };
}

/** A Call-based sender for the bench's agent, throwing on anything but a 200. */
export function burstSender(call: Call): SendTurn {
  return async (roomId, text) => {
    const started = performance.now();
    const response = await call("POST", "/agents/bench/messages", {
      roomId,
      userId: "bench-user",
      text,
    });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${body}`);
    return { ms: performance.now() - started };
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
