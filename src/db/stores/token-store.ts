// API tokens in D1. A token is `ea_` + 32 random bytes (base64url); only its SHA-256 is stored, so
// a leaked database does not leak usable tokens, and a lookup by hash needs no constant-time
// comparison (the secret has 256 bits of entropy: guessing a hash prefix reveals nothing useful).
import { asc, eq } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { apiTokens } from "../schema.ts";
import { sha256Hex, toBase64Url, toHex } from "../../runtime/util/hashing.ts";
import { SCOPES, type Scope } from "../../runtime/access/principal.ts";

export { SCOPES, type Scope };

export const TOKEN_PREFIX = "ea_";
const TOKEN_SECRET_BYTES = 32;
/** How stale `lastUsedAt` may get before a request refreshes it (one write per token per minute). */
export const LAST_USED_RESOLUTION_MS = 60_000;

export interface TokenRecord {
  id: string;
  name: string;
  scopes: Scope[];
  /** The agents it may act for; null means every agent. */
  agents: string[] | null;
  /** Its own rate rule ("100/min"); null means the deployment's RATE_LIMIT_PER_TOKEN. */
  rateLimit: string | null;
  /** The user-id prefix it may act as (src/http/namespaces.ts); null means no prefix limit. */
  userPrefix: string | null;
  createdBy: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
}

export interface NewToken {
  name: string;
  scopes: Scope[];
  agents: string[] | null;
  rateLimit: string | null;
  userPrefix: string | null;
  expiresAt: number | null;
  createdBy: string;
}

export interface TokenStore {
  /** Returns the record and the secret, which is never stored and never shown again. */
  mint(input: NewToken, now: number): Promise<{ record: TokenRecord; token: string }>;
  findBySecret(token: string): Promise<TokenRecord | null>;
  /** By its id (`tok_...`): what a grant it approved checks (its secret is not kept). */
  findById(id: string): Promise<TokenRecord | null>;
  list(): Promise<TokenRecord[]>;
  /** False when no such token exists; revoking twice keeps the first time. */
  revoke(id: string, now: number): Promise<boolean>;
  touch(id: string, now: number): Promise<void>;
}

const StoredScopes = z.array(z.enum(SCOPES));
const StoredAgents = z.array(z.string());

export function createTokenStore(db: Db): TokenStore {
  return {
    async mint(input, now) {
      const token =
        TOKEN_PREFIX + toBase64Url(crypto.getRandomValues(new Uint8Array(TOKEN_SECRET_BYTES)));
      const record: TokenRecord = {
        id: `tok_${toHex(crypto.getRandomValues(new Uint8Array(8)))}`,
        name: input.name,
        scopes: input.scopes,
        agents: input.agents,
        rateLimit: input.rateLimit,
        userPrefix: input.userPrefix,
        createdBy: input.createdBy,
        createdAt: now,
        expiresAt: input.expiresAt,
        revokedAt: null,
        lastUsedAt: null,
      };
      await db.insert(apiTokens).values({
        id: record.id,
        hash: await sha256Hex(token),
        name: record.name,
        scopes: JSON.stringify(record.scopes),
        agents: record.agents ? JSON.stringify(record.agents) : null,
        rateLimit: record.rateLimit,
        userPrefix: record.userPrefix,
        createdBy: record.createdBy,
        createdAt: now,
        expiresAt: record.expiresAt,
      });
      return { record, token };
    },
    async findBySecret(token) {
      if (!token.startsWith(TOKEN_PREFIX)) return null;
      const [row] = await db
        .select()
        .from(apiTokens)
        .where(eq(apiTokens.hash, await sha256Hex(token)))
        .limit(1);
      return row ? toRecord(row) : null;
    },
    async findById(id) {
      const [row] = await db.select().from(apiTokens).where(eq(apiTokens.id, id)).limit(1);
      return row ? toRecord(row) : null;
    },
    async list() {
      const rows = await db
        .select()
        .from(apiTokens)
        .orderBy(asc(apiTokens.createdAt), asc(apiTokens.id));
      return rows.map(toRecord);
    },
    async revoke(id, now) {
      const [row] = await db
        .select({ revokedAt: apiTokens.revokedAt })
        .from(apiTokens)
        .where(eq(apiTokens.id, id))
        .limit(1);
      if (!row) return false;
      if (row.revokedAt === null)
        await db.update(apiTokens).set({ revokedAt: now }).where(eq(apiTokens.id, id));
      return true;
    },
    async touch(id, now) {
      await db.update(apiTokens).set({ lastUsedAt: now }).where(eq(apiTokens.id, id));
    },
  };
}

function toRecord(row: typeof apiTokens.$inferSelect): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: readJsonColumn(StoredScopes, row.scopes, `api_tokens.scopes of ${row.id}`),
    agents:
      row.agents === null
        ? null
        : readJsonColumn(StoredAgents, row.agents, `api_tokens.agents of ${row.id}`),
    rateLimit: row.rateLimit,
    userPrefix: row.userPrefix,
    createdBy: row.createdBy,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    lastUsedAt: row.lastUsedAt,
  };
}
