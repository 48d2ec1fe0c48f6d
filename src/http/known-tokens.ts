// Minted API tokens as this isolate last read them, for TOKEN_CACHE_MS, so a request with a minted
// token, or with an OAuth grant one approved, costs no D1 round trip before its work. Expiry is
// checked on every request against the cached record; a revocation reaches the isolate that
// served it at once and every other isolate within TOKEN_CACHE_MS (docs/api.md). Unknown tokens
// are not cached: each one is looked up.
import { stores } from "../db/stores/index.ts";
import type { TokenRecord } from "../db/stores/token-store.ts";
import { sha256Hex } from "../runtime/util/hashing.ts";
import type { Env } from "../env.ts";

/** How long a revocation may take to reach an isolate that has the token cached. */
export const TOKEN_CACHE_MS = 30_000;
const MAX_CACHED_TOKENS = 1_000;

interface Cached {
  record: TokenRecord;
  until: number;
}

/** By the token's SHA-256 (the secret itself is never kept). */
const cached = new Map<string, Cached>();
/** By the token's id, for the OAuth grants it approved (oauth/grant-approver.ts). */
const cachedById = new Map<string, Cached>();

/** The token's record, from this isolate's cache or D1; null when no such token exists. */
export async function findToken(
  env: Env,
  secret: string,
  now = Date.now(),
): Promise<TokenRecord | null> {
  const hash = await sha256Hex(secret);
  const hit = cached.get(hash);
  if (hit && hit.until > now) return hit.record;
  const record = await stores(env).tokens.findBySecret(secret);
  cached.delete(hash);
  if (record) remember(cached, hash, record, now);
  return record;
}

/** The record of the token with this id, from this isolate's cache or D1; null when none. */
export async function findTokenById(
  env: Env,
  tokenId: string,
  now = Date.now(),
): Promise<TokenRecord | null> {
  const hit = cachedById.get(tokenId);
  if (hit && hit.until > now) return hit.record;
  const record = await stores(env).tokens.findById(tokenId);
  cachedById.delete(tokenId);
  if (record) remember(cachedById, tokenId, record, now);
  return record;
}

function remember(cache: Map<string, Cached>, key: string, record: TokenRecord, now: number) {
  if (cache.size >= MAX_CACHED_TOKENS) {
    // Maps iterate in insertion order: drop the oldest entry.
    const oldest = cache.keys().next().value;
    if (oldest !== undefined) cache.delete(oldest);
  }
  cache.set(key, { record, until: now + TOKEN_CACHE_MS });
}

/** Records a use in the cached copy (its lastUsedAt decides when D1 is told again). */
export function noteTokenUse(tokenId: string, at: number): void {
  for (const entry of cached.values())
    if (entry.record.id === tokenId) entry.record = { ...entry.record, lastUsedAt: at };
}

/** A token was revoked here: this isolate stops accepting it at once. */
export function forgetToken(tokenId: string): void {
  for (const [hash, entry] of cached) if (entry.record.id === tokenId) cached.delete(hash);
  cachedById.delete(tokenId);
}
