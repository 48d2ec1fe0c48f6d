// The token-bucket arithmetic behind every rate limit, and the rule format of the variables.
import { describe, expect, it } from "vitest";
import {
  chargeBucket,
  parseRateRule,
  takeFromBucket,
  type BucketState,
  type RateRule,
} from "../../src/rate-limits/token-bucket.ts";

describe("token bucket", () => {
  it("parses rules and refuses malformed ones", () => {
    expect(parseRateRule("20/min")).toEqual({ capacity: 20, refillPerSecond: 20 / 60 });
    expect(parseRateRule(" 5 / S ")).toEqual({ capacity: 5, refillPerSecond: 5 });
    expect(parseRateRule("1000/day")?.refillPerSecond).toBeCloseTo(1000 / 86_400);
    expect(parseRateRule("off")).toBeNull();
    for (const bad of ["", "20", "0/min", "-1/min", "20/fortnight", "twenty/min", "1.5/s"]) {
      expect(() => parseRateRule(bad), bad).toThrow(/expected/);
    }
  });

  it("allows a burst of `capacity`, then refills continuously and says when to retry", () => {
    const rule: RateRule = { capacity: 3, refillPerSecond: 1 / 20 };
    let state: BucketState | undefined;
    const take = (now: number) => {
      const step = takeFromBucket(state, rule, now);
      state = step.state;
      return step.result;
    };
    expect([take(0), take(0), take(0)].map((r) => r.allowed)).toEqual([true, true, true]);
    const refused = take(1_000);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBeCloseTo(19, 5);
    expect(take(19_999).allowed).toBe(false);
    expect(take(20_000).allowed).toBe(true);
    // A long pause refills to the capacity, never beyond it.
    expect(
      [take(10_000_000), take(10_000_000), take(10_000_000), take(10_000_000)].map(
        (r) => r.allowed,
      ),
    ).toEqual([true, true, true, false]);
  });

  it("charges requests already let through even past empty, and a bucket in debt refuses until refilled", () => {
    const rule: RateRule = { capacity: 3, refillPerSecond: 1 };
    // Five admitted by workers whose copies were full: the exact bucket owes two.
    const owed = chargeBucket(undefined, rule, 0, 5);
    expect(owed).toEqual({ tokens: -2, updatedAt: 0 });
    const refused = takeFromBucket(owed, rule, 1_000);
    expect(refused.result.allowed).toBe(false);
    expect(refused.result.retryAfterSeconds).toBeCloseTo(2, 5);
    expect(takeFromBucket(owed, rule, 3_000).result.allowed).toBe(true);
    // Charges refill first and never beyond the capacity.
    expect(chargeBucket({ tokens: 0, updatedAt: 0 }, rule, 10_000, 1)).toEqual({
      tokens: 2,
      updatedAt: 10_000,
    });
  });
});
