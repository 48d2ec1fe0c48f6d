// RateLimiter: one Durable Object per limited key (`token:<id>`, `user:<surface>:<id>`), holding
// that key's token bucket. A Durable Object, not an isolate-local counter, because a key's
// requests reach many isolates; the bucket is kept in the object's storage, so an eviction does
// not hand out a fresh burst. The arithmetic is src/runtime/token-bucket.ts.
import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import {
  takeFromBucket,
  type BucketState,
  type RateRule,
  type TakeResult,
} from "../runtime/token-bucket.ts";
import type { RateLimiterRpc } from "./rpc.ts";

const BUCKET_KEY = "bucket";

export class RateLimiter extends DurableObject<Env> implements RateLimiterRpc {
  take(rule: RateRule, cost = 1): TakeResult {
    const { state, result } = takeFromBucket(
      this.ctx.storage.kv.get<BucketState>(BUCKET_KEY),
      rule,
      Date.now(),
      cost,
    );
    this.ctx.storage.kv.put(BUCKET_KEY, state);
    return result;
  }
}
