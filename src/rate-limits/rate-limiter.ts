// RateLimiter: one Durable Object per limited key (`token:<id>`, `user:<surface>:<id>`), holding
// that key's exact token bucket. A Durable Object, not only an isolate-local counter, because a
// key's requests reach many isolates; the bucket is kept in the object's storage, so an eviction
// does not hand out a fresh burst. Workers admit requests from their own copy of the bucket and
// charge them here afterwards, off the request's path (src/rate-limits/admission.ts); the answer is the
// bucket as it now stands, which refreshes their copy. The arithmetic is src/rate-limits/token-bucket.ts.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { chargeBucket, type BucketState, type RateRule } from "./token-bucket.ts";
import type { RateLimiterRpc } from "../rpc.ts";

const BUCKET_KEY = "bucket";

export class RateLimiter extends DurableObject<Env> implements RateLimiterRpc {
  /** Records `cost` requests a worker already let through; returns the bucket after them. */
  charge(rule: RateRule, cost: number): BucketState {
    const state = chargeBucket(
      this.ctx.storage.kv.get<BucketState>(BUCKET_KEY),
      rule,
      Date.now(),
      cost,
    );
    this.ctx.storage.kv.put(BUCKET_KEY, state);
    return state;
  }
}
