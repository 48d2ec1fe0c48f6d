// Admission over several buckets at once (a REST turn draws its token's and its person's in one
// call), and the one naming of a person's bucket whatever surface they write from.
import { afterEach, describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { admit, resetRateCopies } from "../../src/rate-limits/admission.ts";
import { personBucket, tokenBucket } from "../../src/rate-limits/buckets.ts";
import type { BucketState, RateRule } from "../../src/rate-limits/token-bucket.ts";

/** A limiter that records each charge and answers with the bucket it keeps per key. */
function limiterEnv() {
  const charges: Array<{ key: string; cost: number }> = [];
  const spent = new Map<string, number>();
  const env = {
    LIMITS: {
      getByName: (key: string) => ({
        charge: async (rule: RateRule, cost: number): Promise<BucketState> => {
          charges.push({ key, cost });
          spent.set(key, (spent.get(key) ?? 0) + cost);
          return { tokens: rule.capacity - (spent.get(key) ?? 0), updatedAt: Date.now() };
        },
      }),
    },
  } as unknown as Env;
  return { env, charges };
}

const slow = (capacity: number): RateRule => ({ capacity, refillPerSecond: 0.0001 });

afterEach(() => resetRateCopies());

describe("admission", () => {
  it("draws from every bucket of a request, charging each once", async () => {
    const { env, charges } = limiterEnv();
    const token = tokenBucket({ id: "t1", rateRule: slow(5) });
    const person = personBucket({ kind: "api", agentId: "a", userId: "ann" }, slow(5));
    await admit(env, [token, person]);
    expect(charges).toEqual([
      { key: "token:t1", cost: 1 },
      { key: "user:rest:a:ann", cost: 1 },
    ]);
  });

  it("refuses when any bucket is empty, naming it, and takes from none of them", async () => {
    const { env, charges } = limiterEnv();
    const token = tokenBucket({ id: "t2", rateRule: slow(2) });
    const person = personBucket({ kind: "api", agentId: "a", userId: "bob" }, slow(1));
    await admit(env, [token, person]);
    await expect(admit(env, [token, person])).rejects.toMatchObject({
      status: 429,
      message: expect.stringContaining('user "bob"'),
    });
    // The token's bucket kept its second request: another person may still use it.
    const other = personBucket({ kind: "api", agentId: "a", userId: "cy" }, slow(1));
    await admit(env, [token, other]);
    await expect(admit(env, [token])).rejects.toMatchObject({ status: 429 });
    expect(charges.filter((charge) => charge.key === "token:t2")).toHaveLength(2);
  });

  it("names a chat member's bucket by their product-wide id, an API user's within its agent", () => {
    const member = personBucket(
      { kind: "member", userId: "discord:42", platformName: "Discord" },
      null,
    );
    expect(member).toMatchObject({ key: "user:discord:42", what: "this Discord user" });
    const api = personBucket({ kind: "api", agentId: "helper", userId: "ann" }, null);
    expect(api).toMatchObject({ key: "user:rest:helper:ann", what: 'user "ann"' });
  });
});
