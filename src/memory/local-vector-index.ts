// The local VectorIndex, used when no Vectorize binding is configured (local dev, tests, small
// deployments). Vectors live in D1 (`memory_vectors`: float32 blob, plus an int8 copy in `code`).
// Scanning them in SQL per query would be far too slow, so each isolate keeps a per-agent cache of
// the int8 vectors and their sign bits, synced incrementally by `seq` (one indexed query per
// search). A query ranks by Hamming distance on the sign bits, then re-ranks the best candidates
// by exact dot product on the int8 vectors. D1 stays the source of truth: rows deleted (also by
// cascade) drop out of the cache when a candidate is confirmed.
import { and, eq, gt, inArray } from "drizzle-orm";
import { DimensionMismatchError } from "../runtime/errors.ts";
import type { MemoryType, VectorIndex, VectorMatch, VectorQuery, VectorRecord } from "../runtime/types.ts";
import type { Db } from "./d1-memory-store.ts";
import { ofAgent } from "./memory-repo.ts";
import { memoryVectors, vectorIndexMeta } from "./schema.ts";

/** Rows per sync query; one statement's result stays small. */
const SYNC_PAGE = 5_000;
/** A vector row binds 8 parameters: 12 rows stay under D1's 100 per statement. */
const VECTOR_ROWS_PER_INSERT = 12;
const IDS_PER_QUERY = 90;
/** Below this many filtered vectors every one is re-ranked exactly. */
const EXACT_BELOW = 4_000;
/** Candidates kept by the Hamming pass: max(MIN_POOL, POOL_FACTOR * topK). */
const MIN_POOL = 600;
const POOL_FACTOR = 24;
/**
 * Bytes of cached vectors per isolate (of its 128 MB) before the least recently used other agents
 * are dropped. The agent being queried always stays: one agent larger than this is served, but a
 * local index much past 100k vectors of 384 dimensions is Vectorize's job (see README).
 */
const MAX_CACHED_BYTES = 48 * 1024 * 1024;
/** Per cached vector besides its int8 values and sign bits: norm, id string, filters, map entry. */
const SLOT_OVERHEAD_BYTES = 160;

interface AgentCache {
  dimensions: number;
  words: number;
  lastSeq: number;
  size: number;
  ids: string[];
  types: MemoryType[];
  rooms: Array<string | null>;
  users: Array<string | null>;
  alive: Uint8Array;
  vectors: Int8Array;
  norms: Float32Array;
  codes: Uint32Array;
  slots: Map<string, number>;
}

const caches = new Map<string, AgentCache>();

/** Forgets every cached agent (tests simulate a fresh isolate with it). */
export function resetLocalVectorCache(): void {
  caches.clear();
}

export function createLocalVectorIndex(db: Db): VectorIndex {
  const readDimensions = async (): Promise<number | null> => {
    const row = await db.select({ value: vectorIndexMeta.value }).from(vectorIndexMeta).where(eq(vectorIndexMeta.key, "dimensions")).get();
    known = row ? Number(row.value) : null;
    return known;
  };
  // Once claimed, the dimension never changes (nothing rewrites it), so a query need not read it
  // again: that read would queue behind the full-text leg's in D1. A query vector that disagrees
  // with the remembered value re-reads before it is refused.
  let known: number | null = null;
  const queryDimensions = async (length: number): Promise<number | null> => (known === length ? known : readDimensions());

  /** The index's dimension, set by the first write (two first writers agree: INSERT OR IGNORE). */
  const claimDimensions = async (wanted: number): Promise<number> => {
    const current = await readDimensions();
    if (current !== null) return current;
    await db.insert(vectorIndexMeta).values({ key: "dimensions", value: String(wanted) }).onConflictDoNothing();
    return (await readDimensions()) ?? wanted;
  };

  const sync = async (agentId: string, dimensions: number): Promise<AgentCache> => {
    let cache = caches.get(agentId);
    if (!cache || cache.dimensions !== dimensions) {
      cache = emptyCache(dimensions);
      caches.set(agentId, cache);
    } else {
      // Most recently used last, for eviction.
      caches.delete(agentId);
      caches.set(agentId, cache);
    }
    for (;;) {
      const rows = await db
        .select({ seq: memoryVectors.seq, id: memoryVectors.memoryId, type: memoryVectors.type, roomId: memoryVectors.roomId, userId: memoryVectors.userId, code: memoryVectors.code })
        .from(memoryVectors)
        .where(and(eq(memoryVectors.agentId, agentId), gt(memoryVectors.seq, cache.lastSeq)))
        .orderBy(memoryVectors.seq)
        .limit(SYNC_PAGE);
      for (const row of rows) {
        const code = new Int8Array(toBytes(row.code).buffer);
        if (code.length === dimensions) put(cache, row.id, row.type, row.roomId, row.userId, code);
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
      if (records.length === 0) return;
      const expected = await claimDimensions(records[0]!.values.length);
      for (const record of records) {
        if (record.values.length !== expected) {
          throw new DimensionMismatchError({ expected, actual: record.values.length, where: `local index, vector for memory ${record.id}` });
        }
      }
      // Delete, then insert: a re-upserted vector gets a new seq, so every cache picks it up.
      const ids = records.map((r) => r.id);
      const statements = [];
      for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
        statements.push(db.delete(memoryVectors).where(inArray(memoryVectors.memoryId, ids.slice(i, i + IDS_PER_QUERY))));
      }
      for (let i = 0; i < records.length; i += VECTOR_ROWS_PER_INSERT) {
        statements.push(
          db.insert(memoryVectors).values(
            records.slice(i, i + VECTOR_ROWS_PER_INSERT).map((record) => ({
              memoryId: record.id,
              agentId: record.metadata.agentId,
              type: record.metadata.type,
              roomId: record.metadata.roomId,
              userId: record.metadata.userId,
              dimensions: expected,
              vector: bytesOf(new Float32Array(record.values)),
              code: bytesOf(quantize(record.values)),
            })),
          ),
        );
      }
      const [first, ...rest] = statements;
      await db.batch([first!, ...rest]);
    },

    async query(query: VectorQuery): Promise<VectorMatch[]> {
      const dimensions = await queryDimensions(query.vector.length);
      if (dimensions === null) return [];
      if (query.vector.length !== dimensions) {
        throw new DimensionMismatchError({ expected: dimensions, actual: query.vector.length, where: "local index, query vector" });
      }
      const cache = await sync(query.agentId, dimensions);
      const candidates = rank(cache, query);
      if (candidates.length === 0) return [];
      // Confirm the winners still exist (a delete, or a cascade from a deleted memory).
      const wanted = candidates.slice(0, Math.max(query.topK * 2, query.topK + 10));
      const chunks: VectorMatch[][] = [];
      for (let i = 0; i < wanted.length; i += IDS_PER_QUERY) chunks.push(wanted.slice(i, i + IDS_PER_QUERY));
      const found = await Promise.all(
        chunks.map((chunk) =>
          db
            .select({ id: memoryVectors.memoryId })
            .from(memoryVectors)
            .where(and(inArray(memoryVectors.memoryId, chunk.map((c) => c.id)), ofAgent(memoryVectors.agentId, query.agentId))),
        ),
      );
      const present = new Set(found.flat().map((row) => row.id));
      for (const candidate of wanted) if (!present.has(candidate.id)) remove(cache, candidate.id);
      return wanted.filter((c) => present.has(c.id)).slice(0, query.topK);
    },

    async delete(agentId: string, ids: string[]) {
      for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
        await db.delete(memoryVectors).where(and(inArray(memoryVectors.memoryId, ids.slice(i, i + IDS_PER_QUERY)), ofAgent(memoryVectors.agentId, agentId)));
      }
      const cache = caches.get(agentId);
      if (cache) for (const id of ids) remove(cache, id);
    },
  };
}

/** Filtered candidates, best first: Hamming pre-selection on sign bits, exact re-rank on int8. */
function rank(cache: AgentCache, query: VectorQuery): VectorMatch[] {
  const { dimensions, words } = cache;
  const types = query.types && query.types.length > 0 ? new Set(query.types) : null;
  const q = query.vector;
  const qCode = new Uint32Array(words);
  for (let d = 0; d < dimensions; d++) if (q[d]! > 0) qCode[d >>> 5]! |= 1 << (d & 31);

  const slots: number[] = [];
  for (let s = 0; s < cache.size; s++) {
    if (!cache.alive[s]) continue;
    if (types && !types.has(cache.types[s]!)) continue;
    if (query.roomId !== undefined && cache.rooms[s] !== query.roomId) continue;
    if (query.userId !== undefined && cache.users[s] !== query.userId) continue;
    slots.push(s);
  }
  let pool = slots;
  const poolSize = Math.max(MIN_POOL, POOL_FACTOR * query.topK);
  if (slots.length > EXACT_BELOW && slots.length > poolSize) {
    const distances = new Uint16Array(slots.length);
    const histogram = new Uint32Array(dimensions + 1);
    for (let i = 0; i < slots.length; i++) {
      const base = slots[i]! * words;
      let distance = 0;
      for (let w = 0; w < words; w++) distance += popcount(cache.codes[base + w]! ^ qCode[w]!);
      distances[i] = distance;
      histogram[distance]!++;
    }
    // The smallest distance that admits `poolSize` candidates (a counting select, O(n)).
    let cutoff = 0;
    for (let total = 0; cutoff <= dimensions; cutoff++) {
      total += histogram[cutoff]!;
      if (total >= poolSize) break;
    }
    pool = [];
    for (let i = 0; i < slots.length; i++) if (distances[i]! <= cutoff) pool.push(slots[i]!);
  }
  let qNorm = 0;
  for (let d = 0; d < dimensions; d++) qNorm += q[d]! * q[d]!;
  qNorm = Math.sqrt(qNorm);
  const scored: VectorMatch[] = pool.map((slot) => {
    const base = slot * dimensions;
    let dot = 0;
    for (let d = 0; d < dimensions; d++) dot += q[d]! * cache.vectors[base + d]!;
    const denominator = cache.norms[slot]! * qNorm;
    return { id: cache.ids[slot]!, score: denominator > 0 ? dot / denominator : 0 };
  });
  return scored.sort((a, b) => b.score - a.score);
}

function emptyCache(dimensions: number): AgentCache {
  const capacity = 256;
  const words = Math.ceil(dimensions / 32);
  return {
    dimensions,
    words,
    lastSeq: 0,
    size: 0,
    ids: [],
    types: [],
    rooms: [],
    users: [],
    alive: new Uint8Array(capacity),
    vectors: new Int8Array(capacity * dimensions),
    norms: new Float32Array(capacity),
    codes: new Uint32Array(capacity * words),
    slots: new Map(),
  };
}

function put(cache: AgentCache, id: string, type: MemoryType, roomId: string | null, userId: string | null, code: Int8Array): void {
  const existing = cache.slots.get(id);
  if (existing !== undefined) cache.alive[existing] = 0;
  if (cache.size === cache.alive.length) grow(cache);
  const slot = cache.size++;
  cache.slots.set(id, slot);
  cache.ids[slot] = id;
  cache.types[slot] = type;
  cache.rooms[slot] = roomId;
  cache.users[slot] = userId;
  cache.alive[slot] = 1;
  cache.vectors.set(code, slot * cache.dimensions);
  let norm = 0;
  for (let d = 0; d < cache.dimensions; d++) {
    const value = code[d]!;
    norm += value * value;
    if (value > 0) cache.codes[slot * cache.words + (d >>> 5)]! |= 1 << (d & 31);
  }
  cache.norms[slot] = Math.sqrt(norm);
}

function remove(cache: AgentCache, id: string): void {
  const slot = cache.slots.get(id);
  if (slot === undefined) return;
  cache.alive[slot] = 0;
  cache.slots.delete(id);
}

function grow(cache: AgentCache): void {
  const capacity = cache.alive.length * 2;
  const alive = new Uint8Array(capacity);
  alive.set(cache.alive);
  const vectors = new Int8Array(capacity * cache.dimensions);
  vectors.set(cache.vectors);
  const norms = new Float32Array(capacity);
  norms.set(cache.norms);
  const codes = new Uint32Array(capacity * cache.words);
  codes.set(cache.codes);
  Object.assign(cache, { alive, vectors, norms, codes });
}

function evictBeyondCapacity(current: string): void {
  const bytes = (cache: AgentCache) => cache.slots.size * (cache.dimensions + cache.words * 4 + SLOT_OVERHEAD_BYTES);
  let total = 0;
  for (const cache of caches.values()) total += bytes(cache);
  for (const [agentId, cache] of caches) {
    if (total <= MAX_CACHED_BYTES || agentId === current) continue;
    total -= bytes(cache);
    caches.delete(agentId);
  }
}

/** Unit vector to int8, scaled by its largest component so precision is not wasted. */
function quantize(values: ArrayLike<number>): Int8Array {
  let max = 0;
  for (let i = 0; i < values.length; i++) max = Math.max(max, Math.abs(values[i]!));
  const out = new Int8Array(values.length);
  if (max === 0) return out;
  for (let i = 0; i < values.length; i++) out[i] = Math.round((values[i]! / max) * 127);
  return out;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

function bytesOf(view: Float32Array | Int8Array): Buffer {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

/** D1 hands blobs back as an ArrayBuffer, a byte array or an array of numbers depending on the path. */
function toBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (Array.isArray(value)) return Uint8Array.from(value as number[]);
  throw new TypeError("unexpected blob value from D1");
}
