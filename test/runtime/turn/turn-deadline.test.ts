// A turn's deadline is a result its phases return, not an error caught two frames up: a call the
// deadline aborted reads as TIMED_OUT where it is made; any other failure stays an error.
import { describe, expect, it } from "vitest";
import {
  beforeDeadline,
  isTimedOut,
  startDeadline,
  TIMED_OUT,
} from "../../../src/runtime/turn/turn-deadline.ts";

describe("the turn's deadline", () => {
  it("passes the work's own value through while the deadline holds", async () => {
    const deadline = startDeadline(1_000);
    try {
      await expect(beforeDeadline(deadline.signal, Promise.resolve("answer"))).resolves.toBe(
        "answer",
      );
    } finally {
      deadline.clear();
    }
  });

  it("reads a call the deadline aborted as TIMED_OUT, not as a failure", async () => {
    const deadline = startDeadline(5);
    const aborted = new Promise((_, reject) =>
      deadline.signal.addEventListener("abort", () => reject(deadline.signal.reason)),
    );
    const result = await beforeDeadline(deadline.signal, aborted);
    expect(result).toBe(TIMED_OUT);
    expect(isTimedOut(result)).toBe(true);
  });

  it("keeps a failure before the deadline an error", async () => {
    const deadline = startDeadline(1_000);
    try {
      await expect(
        beforeDeadline(deadline.signal, Promise.reject(new Error("model down"))),
      ).rejects.toThrow("model down");
    } finally {
      deadline.clear();
    }
  });
});
