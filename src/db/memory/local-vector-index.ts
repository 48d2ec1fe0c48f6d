// The local VectorIndex, used when no Vectorize binding is configured (local dev, tests, small
// deployments). Vectors live in D1 (`memory_vectors`: the int8 copy in `code` and its sign bits;
// the float32 `vector` column is left empty, see EMPTY_FLOAT_COPY).
// Scanning them in SQL per query would be far too slow, so each isolate keeps a per-agent cache of
// the int8 vectors and their sign bits (src/db/memory/vector-cache.ts), synced incrementally by `seq`
// (one indexed query per search), and ranks there. D1 stays the source of truth: a vector deleted
// elsewhere (another isolate, a cascade) leaves this cache when search finds its memory gone and
// calls forget().
import { and, eq, gt, sql } from "drizzle-orm";
import { DimensionMismatchError } from "../../runtime/util/errors.ts";
import type { MemoryType } from "../../runtime/ports/memory.ts";
import type {
  VectorIndex,
  VectorMatch,
  VectorQuery,
  VectorRecord,
} from "../../runtime/ports/vectors.ts";
import { compiled } from "./compiled.ts";
import type { Db } from "../db.ts";
import { markEmbeddedStatements } from "./memory-repo.ts";
import { memoryVectors, vectorIndexMeta } from "../schema.ts";
import { byAgent } from "./vector-outbox.ts";
import {
  cacheBytes,
  createVectorCache,
  EXACT_BELOW,
  putVector,
  quantize,
  rankSlotsFrom,
  rankVectors,
  removeVector,
  signBits,
  type VectorCache,
} from "./vector-cache.ts";

/** Rows per sync query; one statement's result stays small. */
const SYNC_PAGE = 5_000;
/**
 * Bytes of cached vectors per isolate (of its 128 MB) before the least recently used other agents
 * are dropped. The agent being queried always stays: one agent larger than this is served, but a
 * local index much past 100k vectors of 384 dimensions is Vectorize's job (see docs/memory.md).
 */
const MAX_CACHED_BYTES = 48 * 1024 * 1024;
/** Per cached vector besides its typed-array bytes: id string, room and user refs, map entry. */
const SLOT_OVERHEAD_BYTES = 150;

/** The dimension the first vector written set (null: no vector yet). */
const dimensionsRow = compiled((db) =>
  db
    .select({ value: vectorIndexMeta.value })
    .from(vectorIndexMeta)
    .where(eq(vectorIndexMeta.key, "dimensions")),
);

/** An agent's vectors of the memories in a JSON array of ids: removed before they are rewritten. */
const deleteVectors = compiled((db) =>
  db
    .delete(memoryVectors)
    .where(
      and(
        eq(memoryVectors.agentId, sql.placeholder("agentId")),
        sql`${memoryVectors.memoryId} IN (SELECT value FROM json_each(${sql.placeholder("ids")}))`,
      ),
    ),
);

/**
 * What new rows keep in the float32 `vector` column: nothing. Ranking reads only the int8 code
 * and its sign bits, and the float32 copy made a 384-dimension row about 2,050 bytes, just over
 * half a page, so SQLite kept one row per 4 KB page (8.4 KB of D1 per plain turn, two thirds of
 * what a turn wrote; docs/scaling.md). Rows written before keep theirs until re-embedded.
 */
const EMPTY_FLOAT_COPY = new Uint8Array(0);

/** One memory's vector (the int8 copy and its sign bits; see EMPTY_FLOAT_COPY). */
const insertVector = compiled((db) =>
  db.insert(memoryVectors).values({
    memoryId: sql.placeholder("memoryId"),
    agentId: sql.placeholder("agentId"),
    type: sql.placeholder("type"),
    roomId: sql.placeholder("roomId"),
    userId: sql.placeholder("userId"),
    dimensions: sql.placeholder("dimensions"),
    vector: sql.placeholder("vector"),
    code: sql.placeholder("code"),
    bits: sql.placeholder("bits"),
  }),
);

/** One page of an agent's vectors written after a seq: a cache's catch-up, once per search. */
const vectorsAfter = compiled((db) =>
  db
    .select({
      seq: memoryVectors.seq,
      id: sql<string>`${memoryVectors.memoryId}`.as("id"),
      type: memoryVectors.type,
      roomId: memoryVectors.roomId,
      userId: memoryVectors.userId,
      hex: sql<string>`hex(${memoryVectors.code})`.as("hex"),
      bitsHex: sql<string>`hex(${memoryVectors.bits})`.as("bits_hex"),
    })
    .from(memoryVectors)
    .where(
      and(
        eq(memoryVectors.agentId, sql.placeholder("agentId")),
        gt(memoryVectors.seq, sql.placeholder("after")),
      ),
    )
    .orderBy(memoryVectors.seq)
    .limit(SYNC_PAGE),
);

interface SyncRow {
  seq: number;
  id: string;
  type: MemoryType;
  room_id: string | null;
  user_id: string | null;
  hex: string;
  bits_hex: string | null;
}

const caches = new Map<string, VectorCache>();
/**
 * The index's dimension as last read, for the isolate like the caches (every room's index and the
 * worker's read the same database). Once claimed it never changes (nothing rewrites it), so neither
 * a query nor a write need read it again: that read would queue behind the full-text leg's in D1,
 * cost every embedding pass a round trip, and a room's first search one more. A vector that
 * disagrees with the remembered value re-reads before it is refused.
 */
let known: number | null = null;

/** Forgets every cached agent and the dimension (tests simulate a fresh isolate with it). */
export function resetLocalVectorCache(): void {
  caches.clear();
  known = null;
}

export function createLocalVectorIndex(db: Db): VectorIndex {
  const readDimensions = async (): Promise<number | null> => {
    const row = await dimensionsRow.bind(db, {}).first<{ value: string }>();
    known = row ? Number(row.value) : null;
    return known;
  };
  const remembered = (length: number) => known === length;
  const queryDimensions = async (length: number): Promise<number | null> =>
    remembered(length) ? known : readDimensions();

  /** The index's dimension, set by the first write (two first writers agree: INSERT OR IGNORE). */
  const claimDimensions = async (wanted: number): Promise<number> => {
    if (remembered(wanted)) return wanted;
    const current = await readDimensions();
    if (current !== null) return current;
    await db
      .insert(vectorIndexMeta)
      .values({ key: "dimensions", value: String(wanted) })
      .onConflictDoNothing();
    return (await readDimensions()) ?? wanted;
  };

  /** Writes vectors (and, with `embeddedAt`, marks their memories embedded) in one batch. */
  const write = async (records: VectorRecord[], embeddedAt: number | null): Promise<void> => {
    if (records.length === 0) return;
    const expected = await claimDimensions(records[0]!.values.length);
    for (const record of records) {
      if (record.values.length !== expected) {
        throw new DimensionMismatchError({
          expected,
          actual: record.values.length,
          where: `local index, vector for memory ${record.id}`,
        });
      }
    }
    const idsByAgent = byAgent(
      records.map((r) => ({ agentId: r.metadata.agentId, memoryId: r.id })),
    );
    // Delete, then insert: a re-upserted vector gets a new seq, so every cache picks it up.
    const statements: D1PreparedStatement[] = [];
    for (const [agentId, ids] of idsByAgent)
      statements.push(deleteVectors.bind(db, { agentId, ids: JSON.stringify(ids) }));
    for (const record of records) {
      statements.push(
        insertVector.bind(db, {
          memoryId: record.id,
          agentId: record.metadata.agentId,
          type: record.metadata.type,
          roomId: record.metadata.roomId,
          userId: record.metadata.userId,
          dimensions: expected,
          vector: EMPTY_FLOAT_COPY,
          ...codeAndBits(record.values),
        }),
      );
    }
    if (embeddedAt !== null) {
      for (const [agentId, ids] of idsByAgent)
        statements.push(...markEmbeddedStatements(db, agentId, ids, embeddedAt));
    }
    await db.$client.batch(statements);
  };

  /** Catch-ups under way, per agent: searches that start together (a turn's) share one read. */
  const syncing = new Map<string, { dimensions: number; done: Promise<VectorCache> }>();
  const sync = (agentId: string, dimensions: number): Promise<VectorCache> => {
    const running = syncing.get(agentId);
    if (running && running.dimensions === dimensions) return running.done;
    const done = catchUp(agentId, dimensions).finally(() => {
      if (syncing.get(agentId)?.done === done) syncing.delete(agentId);
    });
    syncing.set(agentId, { dimensions, done });
    return done;
  };

  const catchUp = async (agentId: string, dimensions: number): Promise<VectorCache> => {
    let cache = caches.get(agentId);
    if (!cache || cache.dimensions !== dimensions) {
      cache = createVectorCache(dimensions);
      caches.set(agentId, cache);
    } else {
      // Most recently used last, for eviction.
      caches.delete(agentId);
      caches.set(agentId, cache);
    }
    const code = new Int8Array(dimensions);
    const bits = new Uint32Array(cache.words);
    const bitsBytes = new Uint8Array(bits.buffer);
    for (;;) {
      // The int8 values and sign bits as hex text: D1 hands a blob back as an array of numbers,
      // which made reading 100,000 of them (a cold cache) about five times slower than this.
      const { results: rows } = await vectorsAfter
        .bind(db, { agentId, after: cache.lastSeq })
        .all<SyncRow>();
      for (const row of rows) {
        if (row.hex.length === 2 * dimensions) {
          int8FromHex(row.hex, code);
          // Rows written before migration 0011 have no bits: putVector computes them.
          const hasBits = row.bits_hex?.length === 2 * bitsBytes.length;
          if (hasBits) bytesFromHex(row.bits_hex!, bitsBytes);
          putVector(
            cache,
            row.id,
            row.type,
            row.room_id,
            row.user_id,
            code,
            hasBits ? bits : undefined,
          );
        }
        cache.lastSeq = row.seq;
      }
      if (rows.length < SYNC_PAGE) break;
    }
    evictBeyondCapacity(agentId);
    return cache;
  };

  return {
    kind: "local",
    dimensions: readDimensions,

    async upsert(records: VectorRecord[]) {
      await write(records, null);
    },

    async upsertEmbedded(records: VectorRecord[], at: number) {
      await write(records, at);
    },

    async query(query: VectorQuery): Promise<VectorMatch[]> {
      const dimensions = await queryDimensions(query.vector.length);
      if (dimensions === null) return [];
      if (query.vector.length !== dimensions) {
        throw new DimensionMismatchError({
          expected: dimensions,
          actual: query.vector.length,
          where: "local index, query vector",
        });
      }
      const cache = await sync(query.agentId, dimensions);
      // No read-back here: search reads the hits' memories anyway and reports the gone ones
      // through forget(), so a deleted memory's vector leaves this cache the first time it surfaces.
      return rankVectors(cache, query).slice(0, query.topK);
    },

    queryStaged(query: VectorQuery) {
      const cache = caches.get(query.agentId);
      // Only a cache this isolate already holds, for a vector of the dimension it has checked.
      if (!cache || !remembered(query.vector.length) || cache.dimensions !== known) return null;
      // Ranked before the catch-up's rows arrive (they are applied after an await, never during
      // this synchronous call); then only the slots the catch-up added are scored and merged in.
      const final = sync(query.agentId, known);
      const before = cache.size;
      const ranked = rankVectors(cache, query);
      return {
        early: ranked.slice(0, query.topK),
        final: final.then((synced) => {
          // Many new vectors (a large import since): ranked as a whole, not each scored exactly.
          if (synced !== cache || synced.size - before > EXACT_BELOW)
            return rankVectors(synced, query).slice(0, query.topK);
          // A match whose vector was replaced (now in a later slot) or dropped since is left out.
          const kept = ranked.filter((match) => (synced.slots.get(match.id) ?? before) < before);
          return mergeByScore(kept, rankSlotsFrom(synced, query, before)).slice(0, query.topK);
        }),
      };
    },

    forget: forgetCached,

    async delete(agentId: string, ids: string[]) {
      if (ids.length > 0) await deleteVectors.bind(db, { agentId, ids: JSON.stringify(ids) }).run();
      forgetCached(agentId, ids);
    },
  };
}

/** Two lists sorted best first, as one (on equal scores, `a`'s first). */
function mergeByScore(a: VectorMatch[], b: VectorMatch[]): VectorMatch[] {
  if (b.length === 0) return a;
  const merged: VectorMatch[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i]!.score >= b[j]!.score)) merged.push(a[i++]!);
    else merged.push(b[j++]!);
  }
  return merged;
}

function forgetCached(agentId: string, ids: string[]): void {
  const cache = caches.get(agentId);
  if (cache) for (const id of ids) removeVector(cache, id);
}

function evictBeyondCapacity(current: string): void {
  const bytes = (cache: VectorCache) => cacheBytes(cache, SLOT_OVERHEAD_BYTES);
  let total = 0;
  for (const cache of caches.values()) total += bytes(cache);
  for (const [agentId, cache] of caches) {
    if (total <= MAX_CACHED_BYTES || agentId === current) continue;
    total -= bytes(cache);
    caches.delete(agentId);
  }
}

function bytesOf(view: Float32Array | Int8Array): Buffer {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

const HEX_DIGIT = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX_DIGIT[48 + i] = i;
for (let i = 0; i < 6; i++) HEX_DIGIT[65 + i] = HEX_DIGIT[97 + i] = 10 + i;

/** SQLite's hex() of an int8 vector back into `out` (the byte's bits, read as signed). */
export function int8FromHex(hex: string, out: Int8Array): void {
  bytesFromHex(hex, out);
}

function bytesFromHex(hex: string, out: Int8Array | Uint8Array): void {
  for (let i = 0, j = 0; i < out.length; i++, j += 2)
    out[i] = (HEX_DIGIT[hex.charCodeAt(j)]! << 4) | HEX_DIGIT[hex.charCodeAt(j + 1)]!;
}

/** A vector's int8 code and the sign bits the cache ranks it by (stored so a cold cache skips computing them). */
function codeAndBits(values: number[] | Float32Array): { code: Buffer; bits: Buffer } {
  const code = quantize(values);
  const bits = signBits(code);
  return { code: bytesOf(code), bits: Buffer.from(bits.buffer, bits.byteOffset, bits.byteLength) };
}
