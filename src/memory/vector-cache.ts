// The in-memory half of the local vector index (src/memory/local-vector-index.ts): one agent's
// vectors as int8 values plus their sign bits, in flat typed arrays, and the ranking over them.
// Pure: no D1, so its speed and its agreement with exact cosine are tested and benchmarked alone.
//
// A query ranks in three passes: Hamming distance over 128 of the sign bits for every vector, the
// full sign bits for the best few thousand, and exact dot products on the int8 values for the best
// few hundred. Every pass is one loop over typed arrays, with filters as integer compares.
import { MEMORY_TYPES } from "./schema.ts";
import type { MemoryType, VectorMatch, VectorQuery } from "../runtime/types.ts";

/** Below this many filtered vectors every one is scored exactly. */
export const EXACT_BELOW = 4_000;
/** Vectors kept for exact scoring: max(MIN_POOL, POOL_FACTOR * topK). */
const MIN_POOL = 600;
const POOL_FACTOR = 24;
/** Vectors kept by the 128-bit pass for the full-width one: this many times the pool. */
const COARSE_FACTOR = 8;
/** Sign-bit words (of 32 bits) the first pass reads. */
const COARSE_WORDS = 4;
const NO_MATCH = 0xffff;

export interface VectorCache {
  readonly dimensions: number;
  /** 32-bit words of sign bits per vector. */
  readonly words: number;
  /** The largest `seq` of memory_vectors seen: the next sync reads past it. */
  lastSeq: number;
  /** Slots used (live or dead). */
  size: number;
  /** Live vectors. */
  live: number;
  ids: string[];
  /** Room and user of each slot as numbers from `names` (0: none), so filters compare integers. */
  rooms: Int32Array;
  users: Int32Array;
  names: Map<string, number>;
  /** Index into MEMORY_TYPES; 255 for a dead slot. */
  types: Uint8Array;
  vectors: Int8Array;
  norms: Float32Array;
  codes: Uint32Array;
  /** Per-slot scratch distances, reused by every query. */
  distances: Uint16Array;
  slots: Map<string, number>;
}

const DEAD = 255;
const TYPE_CODE = new Map<MemoryType, number>(MEMORY_TYPES.map((type, i) => [type, i]));

/** Coordinates of the rotation: the next power of two from the dimension (at least 32). */
function rotationSize(dimensions: number): number {
  let n = 32;
  while (n < dimensions) n <<= 1;
  return n;
}

export function createVectorCache(dimensions: number, capacity = 256): VectorCache {
  const words = rotationSize(dimensions) / 32;
  return {
    dimensions,
    words,
    lastSeq: 0,
    size: 0,
    live: 0,
    ids: [],
    rooms: new Int32Array(capacity),
    users: new Int32Array(capacity),
    names: new Map(),
    types: new Uint8Array(capacity),
    vectors: new Int8Array(capacity * dimensions),
    norms: new Float32Array(capacity),
    codes: new Uint32Array(capacity * words),
    distances: new Uint16Array(capacity),
    slots: new Map(),
  };
}

/** Adds a vector (int8 values, as quantize() makes them), replacing any earlier one of that id. */
export function putVector(cache: VectorCache, id: string, type: MemoryType, roomId: string | null, userId: string | null, code: Int8Array): void {
  removeVector(cache, id);
  if (cache.size === cache.types.length) grow(cache);
  const slot = cache.size++;
  cache.live++;
  cache.slots.set(id, slot);
  cache.ids[slot] = id;
  cache.types[slot] = TYPE_CODE.get(type) ?? DEAD;
  cache.rooms[slot] = nameNumber(cache, roomId);
  cache.users[slot] = nameNumber(cache, userId);
  cache.vectors.set(code, slot * cache.dimensions);
  let norm = 0;
  for (let d = 0; d < cache.dimensions; d++) norm += code[d]! * code[d]!;
  cache.norms[slot] = Math.sqrt(norm);
  signCode(code, cache.codes, slot * cache.words);
}

function nameNumber(cache: VectorCache, name: string | null): number {
  if (name === null) return 0;
  let number = cache.names.get(name);
  if (number === undefined) cache.names.set(name, (number = cache.names.size + 1));
  return number;
}

export function removeVector(cache: VectorCache, id: string): void {
  const slot = cache.slots.get(id);
  if (slot === undefined) return;
  cache.types[slot] = DEAD;
  cache.slots.delete(id);
  cache.live--;
}

/** Bytes the cache holds (dead slots included, they keep their space), for the isolate's memory budget. */
export function cacheBytes(cache: VectorCache, overheadPerSlot: number): number {
  return cache.size * (cache.dimensions + cache.words * 4 + 2 + 1 + 4 + overheadPerSlot);
}

/** Filtered matches, best first, by cosine (exact on the int8 values of the candidates). */
export function rankVectors(cache: VectorCache, query: VectorQuery): VectorMatch[] {
  const { dimensions, words, size, types, codes, distances, rooms, users } = cache;
  let typeMask = 0;
  if (query.types && query.types.length > 0) for (const type of query.types) typeMask |= 1 << (TYPE_CODE.get(type) ?? 31);
  else typeMask = ~0;
  // A filter value the cache has never seen matches nothing (-1 is no slot's number).
  const roomId = query.roomId === undefined ? 0 : (cache.names.get(query.roomId) ?? -1);
  const userId = query.userId === undefined ? 0 : (cache.names.get(query.userId) ?? -1);
  const q = query.vector;
  const qCode = new Uint32Array(words);
  signCode(q, qCode, 0);
  const coarseWords = Math.min(COARSE_WORDS, words);
  const coarseBits = coarseWords * 32;

  // Pass 1: the filter, and the Hamming distance over the first coarseWords words.
  const coarseHistogram = new Uint32Array(coarseBits + 1);
  let matching = 0;
  const q0 = qCode[0]!, q1 = qCode[1] ?? 0, q2 = qCode[2] ?? 0, q3 = qCode[3] ?? 0;
  for (let s = 0; s < size; s++) {
    const type = types[s]!;
    if (type === DEAD || ((typeMask >>> type) & 1) === 0 || (roomId !== 0 && rooms[s] !== roomId) || (userId !== 0 && users[s] !== userId)) {
      distances[s] = NO_MATCH;
      continue;
    }
    const base = s * words;
    let distance = popcount(codes[base]! ^ q0);
    if (coarseWords > 1) distance += popcount(codes[base + 1]! ^ q1);
    if (coarseWords > 2) distance += popcount(codes[base + 2]! ^ q2);
    if (coarseWords > 3) distance += popcount(codes[base + 3]! ^ q3);
    distances[s] = distance;
    coarseHistogram[distance]!++;
    matching++;
  }
  if (matching === 0) return [];

  const poolSize = Math.max(MIN_POOL, POOL_FACTOR * query.topK);
  let pool: number[];
  if (matching <= EXACT_BELOW || matching <= poolSize) {
    pool = [];
    for (let s = 0; s < size; s++) if (distances[s] !== NO_MATCH) pool.push(s);
  } else {
    // Pass 2: the full sign bits, for the vectors inside the coarse cut.
    const coarseCut = cutoff(coarseHistogram, poolSize * COARSE_FACTOR);
    const histogram = new Uint32Array(dimensions + 1);
    const kept: number[] = [];
    for (let s = 0; s < size; s++) {
      if (distances[s]! > coarseCut) continue;
      const base = s * words;
      let distance = 0;
      for (let w = 0; w < words; w++) distance += popcount(codes[base + w]! ^ qCode[w]!);
      distances[s] = distance;
      histogram[distance]!++;
      kept.push(s);
    }
    const cut = cutoff(histogram, poolSize);
    pool = kept.filter((s) => distances[s]! <= cut);
  }

  // Pass 3: exact cosine on the int8 values.
  let qNorm = 0;
  for (let d = 0; d < dimensions; d++) qNorm += q[d]! * q[d]!;
  qNorm = Math.sqrt(qNorm);
  const { vectors, norms, ids } = cache;
  const scored: VectorMatch[] = new Array(pool.length);
  for (let i = 0; i < pool.length; i++) {
    const slot = pool[i]!;
    const base = slot * dimensions;
    let dot = 0;
    for (let d = 0; d < dimensions; d++) dot += q[d]! * vectors[base + d]!;
    const denominator = norms[slot]! * qNorm;
    scored[i] = { id: ids[slot]!, score: denominator > 0 ? dot / denominator : 0 };
  }
  return scored.sort((a, b) => b.score - a.score);
}

/** The smallest distance that admits at least `wanted` vectors (a counting select, O(bits)). */
function cutoff(histogram: Uint32Array, wanted: number): number {
  let total = 0;
  for (let distance = 0; distance < histogram.length; distance++) {
    total += histogram[distance]!;
    if (total >= wanted) return distance;
  }
  return histogram.length - 1;
}

function grow(cache: VectorCache): void {
  const capacity = cache.types.length * 2;
  const types = new Uint8Array(capacity);
  types.set(cache.types);
  const vectors = new Int8Array(capacity * cache.dimensions);
  vectors.set(cache.vectors);
  const norms = new Float32Array(capacity);
  norms.set(cache.norms);
  const rooms = new Int32Array(capacity);
  rooms.set(cache.rooms);
  const users = new Int32Array(capacity);
  users.set(cache.users);
  const codes = new Uint32Array(capacity * cache.words);
  codes.set(cache.codes);
  Object.assign(cache, { types, vectors, norms, rooms, users, codes, distances: new Uint16Array(capacity) });
}

/** Unit vector to int8, scaled by its largest component so precision is not wasted. */
export function quantize(values: ArrayLike<number>): Int8Array {
  let max = 0;
  for (let i = 0; i < values.length; i++) max = Math.max(max, Math.abs(values[i]!));
  const out = new Int8Array(values.length);
  if (max === 0) return out;
  for (let i = 0; i < values.length; i++) out[i] = Math.round((values[i]! / max) * 127);
  return out;
}

/**
 * Sign bits of a fixed random rotation of the vector (random signs, then a Walsh-Hadamard
 * transform over the next power of two): the fraction of bits two codes differ in estimates the
 * angle between the vectors whatever their shape. The raw signs do not: sparse vectors (the local
 * embedder's hashed n-grams) share zeros, and short texts then look close to everything.
 */
export function signCode(values: Int8Array | Float32Array, out: Uint32Array, offset: number): void {
  const n = rotationSize(values.length);
  if (scratch.length < n) scratch = new Float64Array(n);
  const x = scratch;
  const signs = ROTATION_SIGNS;
  const length = values.length;
  for (let i = 0; i < length; i++) x[i] = values[i]! * signs[i]!;
  x.fill(0, length, n);
  for (let half = 1; half < n; half <<= 1) {
    const step = half << 1;
    for (let i = 0; i < n; i += step) {
      for (let j = i, end = i + half; j < end; j++) {
        const a = x[j]!;
        const b = x[j + half]!;
        x[j] = a + b;
        x[j + half] = a - b;
      }
    }
  }
  for (let w = 0; w < n >>> 5; w++) {
    let bits = 0;
    for (let b = 0; b < 32; b++) if (x[(w << 5) + b]! > 0) bits |= 1 << b;
    out[offset + w] = bits;
  }
}

let scratch = new Float64Array(512);

/** ±1 per coordinate from a fixed seed: every isolate rotates alike. */
const ROTATION_SIGNS = (() => {
  const signs = new Float64Array(4096);
  let state = 0x9e3779b9;
  for (let i = 0; i < signs.length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    signs[i] = state & 1 ? 1 : -1;
  }
  return signs;
})();

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}
