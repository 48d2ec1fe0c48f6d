// The history window slides in steps (src/runtime/context/history-provider.ts): while the room fits,
// every message is shown and each turn only adds at the end; once it does not, the window starts at
// a checkpoint message (one in CHECKPOINT_EVERY, by a hash of its id), which stays put as messages
// arrive, so most turns' requests still repeat the one before; when the checkpoint no longer fits,
// the window drops every message up to the next checkpoint at once.
import { describe, expect, it } from "vitest";
import {
  CHECKPOINT_EVERY,
  historyWindow,
  isCheckpoint,
} from "../../../src/runtime/context/history-provider.ts";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import type { TurnInput } from "../../../src/runtime/turn/turn-types.ts";
import { loadTokenCounter } from "../../../src/runtime/util/tokens.ts";
import { FakeMemoryStore } from "../../helpers/fakes.ts";

const tokens = await loadTokenCounter();

function message(i: number): Memory {
  return {
    id: `m${i}`,
    type: "message",
    agentId: "a",
    roomId: "r",
    userId: "u",
    // 10 tokens each, counted once when stored.
    content: { text: `message ${i}`, role: "user" },
    metadata: { tokens: 10 },
    createdAt: 1_000 + i,
  };
}

async function windowsOver(turns: number, historyTokens: number) {
  const memory = new FakeMemoryStore();
  const windows: string[][] = [];
  for (let i = 0; i < turns; i++) {
    const input = { agentId: "a", roomId: "r", turnId: `turn-${i}` } as TurnInput;
    const { messages } = await historyWindow({
      input,
      memory,
      tokens,
      historyTokens,
      historyFetchLimit: 1_000,
    });
    windows.push(messages.map((m) => m.id));
    await memory.saveMemory(message(i));
  }
  return windows;
}

/** How many turns' windows do not start where the turn before's did (the cached prefix breaks). */
function starts(windows: string[][]): number {
  return windows.slice(1).filter((w, i) => w[0] !== windows[i]![0]).length;
}

describe("the history window", () => {
  it("shows the whole room while it fits, one message more each turn", async () => {
    const windows = await windowsOver(20, 1_000);
    for (const [i, w] of windows.entries()) expect(w).toHaveLength(i);
    expect(starts(windows.filter((w) => w.length > 0))).toBe(0);
  });

  it("once full, starts at a checkpoint and moves in steps, never past its budget", async () => {
    const budget = 300; // 30 messages
    const windows = await windowsOver(400, budget);
    const full = windows.slice(31);
    for (const w of full) {
      expect(w.length * 10).toBeLessThanOrEqual(budget);
      expect(isCheckpoint(message(Number(w[0]!.slice(1))))).toBe(true);
      // Oldest first, and always up to the newest message.
      expect(w.at(-1)).toBe(`m${windows.indexOf(w) - 1}`);
    }
    // A window sliding a message at a time would move on each of these turns; in steps it moves
    // about once per CHECKPOINT_EVERY messages.
    const moves = starts(full);
    expect(moves).toBeGreaterThan(0);
    expect(moves).toBeLessThan((full.length / CHECKPOINT_EVERY) * 1.5);
  });

  it("falls back to the newest messages that fit when no checkpoint fits", async () => {
    // A budget of 2 messages holds a checkpoint only now and then.
    const windows = await windowsOver(40, 20);
    for (const w of windows.slice(3)) expect(w.length).toBeGreaterThan(0);
  });
});
