// The one retry loop and its policy (src/runtime/util/retry.ts), as the model backends and the
// clients' caller (src/net/retrying-call.ts) use it: attempts scripted as outcomes, an injected
// sleep that records each wait, random() fixed.
import { describe, expect, it } from "vitest";
import {
  type AttemptOutcome,
  backoffDelayMs,
  resolveRetryPolicy,
  retrying,
  serverRetryDelayMs,
} from "../../../src/runtime/util/retry.ts";

const policy = resolveRetryPolicy({ maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 8_000 });

function scripted(outcomes: AttemptOutcome<string, string>[]) {
  const attempts: number[] = [];
  const slept: number[] = [];
  return {
    attempts,
    slept,
    attempt: async (n: number) => {
      attempts.push(n);
      return outcomes[Math.min(n - 1, outcomes.length - 1)]!;
    },
    sleep: async (ms: number) => {
      slept.push(ms);
    },
  };
}

const fail = (outcome: AttemptOutcome<string, string>) => outcome;

describe("The retry loop", () => {
  it("backs off with full jitter, then returns the value with the attempts it took", async () => {
    const run = scripted([
      fail({ ok: false, failure: "503", retry: "backoff" }),
      fail({ ok: false, failure: "timeout", retry: "backoff" }),
      { ok: true, value: "answer" },
    ]);
    const result = await retrying(run.attempt, { policy, sleep: run.sleep, random: () => 0.5 });
    expect(result).toEqual({ ok: true, value: "answer", attempts: 3 });
    expect(run.slept).toEqual([250, 500]);
  });

  it("waits the server's own delay instead of backing off", async () => {
    const run = scripted([
      fail({ ok: false, failure: "429", retry: { afterMs: 2_000 } }),
      { ok: true, value: "answer" },
    ]);
    await retrying(run.attempt, { policy, sleep: run.sleep, random: () => 0.5 });
    expect(run.slept).toEqual([2_000]);
  });

  it("returns a final failure at once, without sleeping", async () => {
    const run = scripted([fail({ ok: false, failure: "401", retry: "final" })]);
    const result = await retrying(run.attempt, { policy, sleep: run.sleep });
    expect(result).toEqual({ ok: false, failure: "401", attempts: 1 });
    expect(run.slept).toEqual([]);
  });

  it("names a server wait past the cap instead of sleeping it (the model fails over)", async () => {
    const run = scripted([fail({ ok: false, failure: "429", retry: { afterMs: 120_000 } })]);
    const result = await retrying(run.attempt, { policy, sleep: run.sleep });
    expect(result).toEqual({ ok: false, failure: "429", attempts: 1, tooLongWaitMs: 120_000 });
    expect(run.slept).toEqual([]);
  });

  it("stops after maxAttempts, with no sleep after the last", async () => {
    const run = scripted([fail({ ok: false, failure: "500", retry: "backoff" })]);
    const result = await retrying(run.attempt, { policy, sleep: run.sleep, random: () => 1 });
    expect(result).toEqual({ ok: false, failure: "500", attempts: 4 });
    expect(run.slept).toEqual([500, 1_000, 2_000]);
  });

  it("ends the call when the next wait would pass the total budget", async () => {
    const run = scripted([fail({ ok: false, failure: "429", retry: { afterMs: 25_000 } })]);
    const result = await retrying(run.attempt, { policy, sleep: run.sleep });
    // The default budget is 60 s: two waits of 25 s fit, a third does not.
    expect(result).toEqual({ ok: false, failure: "429", attempts: 3 });
    expect(run.slept).toEqual([25_000, 25_000]);
  });

  it("stops at the caller's abort, even when the injected sleep ignores it", async () => {
    const controller = new AbortController();
    const run = scripted([fail({ ok: false, failure: "busy", retry: "backoff" })]);
    const call = retrying(run.attempt, {
      policy,
      signal: controller.signal,
      sleep: async () => controller.abort(new Error("turn over")),
    });
    await expect(call).rejects.toThrow("turn over");
    expect(run.attempts).toEqual([1]);
  });
});

describe("The retry policy", () => {
  it("caps full jitter at maxDelayMs", () => {
    expect(backoffDelayMs(1, policy, () => 1)).toBe(500);
    expect(backoffDelayMs(10, policy, () => 1)).toBe(8_000);
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
  });

  it("reads retry-after-ms before Retry-After, in seconds or as an HTTP-date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    const headers = (init: Record<string, string>) => new Headers(init);
    expect(serverRetryDelayMs(headers({ "retry-after-ms": "1250", "retry-after": "9" }), now)).toBe(
      1_250,
    );
    expect(serverRetryDelayMs(headers({ "retry-after": "2.5" }), now)).toBe(2_500);
    const at = new Date(now + 3_000).toUTCString();
    expect(serverRetryDelayMs(headers({ "retry-after": at }), now)).toBe(3_000);
    expect(serverRetryDelayMs(headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(serverRetryDelayMs(undefined, now)).toBeUndefined();
  });
});
