// The in-memory half of the local vector index (src/db/memory/local-vector-index.ts): one agent's
// vectors as int8 values plus their sign bits, in one WebAssembly memory per agent, and the
// ranking over them. Pure: no D1, so its speed and its agreement with exact cosine are tested and
// benchmarked alone.
//
// A query ranks in three passes: Hamming distance over 128 of the sign bits for every vector, the
// full sign bits for the best few thousand, and exact dot products on the int8 values for the best
// few hundred. The passes' loops are in src/db/memory/wasm/rank.wat (native popcount); this file keeps
// the layout, the filters' numbering and the cuts between passes.
import { MEMORY_TYPES } from "../schema.ts";
import type { MemoryType } from "../../runtime/ports/memory.ts";
import type { VectorMatch, VectorQuery } from "../../runtime/ports/vectors.ts";
import rankModule from "./wasm/rank.wasm";

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
const PAGE_BYTES = 65_536;

interface Kernels {
  coarse(
    size: number,
    codes: number,
    words: number,
    coarse: number,
    types: number,
    rooms: number,
    users: number,
    typeMask: number,
    room: number,
    user: number,
    q0: number,
    q1: number,
    q2: number,
    q3: number,
    distances: number,
    histogram: number,
  ): number;
  refine(
    size: number,
    codes: number,
    words: number,
    coarse: number,
    query: number,
    cut: number,
    distances: number,
    histogram: number,
    kept: number,
  ): number;
  dots(
    pool: number,
    count: number,
    vectors: number,
    dimensions: number,
    query: number,
    out: number,
  ): void;
}

/** Byte offsets of each region in a cache's memory, for a capacity (4- and 8-byte regions first). */
interface Layout {
  codes: number;
  norms: number;
  rooms: number;
  users: number;
  kept: number;
  out: number;
  query: number;
  queryCode: number;
  histogram: number;
  distances: number;
  types: number;
  vectors: number;
  bytes: number;
}

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
  capacity: number;
  ids: string[];
  /** Room and user of each slot as numbers from `names` (0: none), so filters compare integers. */
  names: Map<string, number>;
  slots: Map<string, number>;
  memory: WebAssembly.Memory;
  kernels: Kernels;
  layout: Layout;
  // Views of the memory's regions, made again whenever the memory is replaced (growth).
  rooms: Int32Array;
  users: Int32Array;
  /** Index into MEMORY_TYPES; 255 for a dead slot. */
  types: Uint8Array;
  vectors: Int8Array;
  norms: Float32Array;
  codes: Uint32Array;
}

const DEAD = 255;
const TYPE_CODE = new Map<MemoryType, number>(MEMORY_TYPES.map((type, i) => [type, i]));

/** Coordinates of the rotation: the next power of two from the dimension (at least 32). */
function rotationSize(dimensions: number): number {
  let n = 32;
  while (n < dimensions) n <<= 1;
  return n;
}

function layoutFor(capacity: number, dimensions: number, words: number): Layout {
  let at = 0;
  const take = (bytes: number, align = 4) => {
    at = Math.ceil(at / align) * align;
    const offset = at;
    at += bytes;
    return offset;
  };
  const codes = take(capacity * words * 4);
  const norms = take(capacity * 4);
  const rooms = take(capacity * 4);
  const users = take(capacity * 4);
  const kept = take(capacity * 4);
  const out = take(capacity * 8, 8);
  const query = take(dimensions * 4);
  const queryCode = take(words * 4);
  const histogram = take((words * 32 + 1) * 4);
  const distances = take(capacity * 2, 2);
  const types = take(capacity, 1);
  const vectors = take(capacity * dimensions, 1);
  return {
    codes,
    norms,
    rooms,
    users,
    kept,
    out,
    query,
    queryCode,
    histogram,
    distances,
    types,
    vectors,
    bytes: at,
  };
}

/** A memory (and an instance of the kernels over it) sized for `capacity` slots, with its views. */
function allocate(capacity: number, dimensions: number, words: number) {
  const layout = layoutFor(capacity, dimensions, words);
  const memory = new WebAssembly.Memory({ initial: Math.ceil(layout.bytes / PAGE_BYTES) });
  const instance = new WebAssembly.Instance(rankModule, { env: { memory } });
  const buffer = memory.buffer;
  return {
    capacity,
    memory,
    layout,
    kernels: instance.exports as unknown as Kernels,
    codes: new Uint32Array(buffer, layout.codes, capacity * words),
    norms: new Float32Array(buffer, layout.norms, capacity),
    rooms: new Int32Array(buffer, layout.rooms, capacity),
    users: new Int32Array(buffer, layout.users, capacity),
    types: new Uint8Array(buffer, layout.types, capacity),
    vectors: new Int8Array(buffer, layout.vectors, capacity * dimensions),
  };
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
    names: new Map(),
    slots: new Map(),
    ...allocate(capacity, dimensions, words),
  };
}

/**
 * Adds a vector (int8 values, as quantize() makes them), replacing any earlier one of that id.
 * `bits`: its sign bits if already known (signBits of the same code), saving their computation.
 */
export function putVector(
  cache: VectorCache,
  id: string,
  type: MemoryType,
  roomId: string | null,
  userId: string | null,
  code: Int8Array,
  bits?: Uint32Array,
): void {
  removeVector(cache, id);
  if (cache.size === cache.capacity) grow(cache);
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
  if (bits && bits.length === cache.words) cache.codes.set(bits, slot * cache.words);
  else signCode(code, cache.codes, slot * cache.words);
}

/** The sign bits the cache ranks a code by, to store beside it (putVector's `bits`). */
export function signBits(code: Int8Array): Uint32Array {
  const bits = new Uint32Array(rotationSize(code.length) / 32);
  signCode(code, bits, 0);
  return bits;
}

function nameNumber(cache: VectorCache, name: string | null): number {
  if (name === null) return 0;
  let number = cache.names.get(name);
  if (number === undefined) {
    number = cache.names.size + 1;
    cache.names.set(name, number);
  }
  return number;
}

export function removeVector(cache: VectorCache, id: string): void {
  const slot = cache.slots.get(id);
  if (slot === undefined) return;
  cache.types[slot] = DEAD;
  cache.slots.delete(id);
  cache.live--;
}

/** Bytes the cache holds (its whole memory, dead and spare slots included), for the isolate's budget. */
export function cacheBytes(cache: VectorCache, overheadPerSlot: number): number {
  return cache.memory.buffer.byteLength + cache.size * overheadPerSlot;
}

/** Filtered matches, best first, by cosine (exact on the int8 values of the candidates). */
export function rankVectors(cache: VectorCache, query: VectorQuery): VectorMatch[] {
  const { dimensions, words, size, layout, kernels, memory } = cache;
  const { typeMask, roomId, userId } = filterOf(cache, query);
  const q = query.vector;
  const buffer = memory.buffer;
  const qCode = new Uint32Array(buffer, layout.queryCode, words);
  signCode(q, qCode, 0);
  new Float32Array(buffer, layout.query, dimensions).set(q);
  const coarseWords = Math.min(COARSE_WORDS, words);
  const histogram = new Uint32Array(buffer, layout.histogram, words * 32 + 1);
  const distances = new Uint16Array(buffer, layout.distances, size);

  // Pass 1: the filter, and the Hamming distance over the first coarseWords words.
  histogram.fill(0);
  const matching = kernels.coarse(
    size,
    layout.codes,
    words,
    coarseWords,
    layout.types,
    layout.rooms,
    layout.users,
    typeMask,
    roomId,
    userId,
    qCode[0]!,
    qCode[1] ?? 0,
    qCode[2] ?? 0,
    qCode[3] ?? 0,
    layout.distances,
    layout.histogram,
  );
  if (matching === 0) return [];

  const poolSize = Math.max(MIN_POOL, POOL_FACTOR * query.topK);
  const pool = new Int32Array(buffer, layout.kept, cache.capacity);
  let pooled = 0;
  if (matching <= EXACT_BELOW || matching <= poolSize) {
    for (let s = 0; s < size; s++) if (distances[s] !== NO_MATCH) pool[pooled++] = s;
  } else {
    // Pass 2: the full sign bits, for the vectors inside the coarse cut.
    const coarseCut = cutoff(histogram.subarray(0, coarseWords * 32 + 1), poolSize * COARSE_FACTOR);
    histogram.fill(0);
    const kept = kernels.refine(
      size,
      layout.codes,
      words,
      coarseWords,
      layout.queryCode,
      coarseCut,
      layout.distances,
      layout.histogram,
      layout.kept,
    );
    const cut = cutoff(histogram, poolSize);
    for (let i = 0; i < kept; i++) {
      const s = pool[i]!;
      if (distances[s]! <= cut) pool[pooled++] = s;
    }
  }

  return scorePool(cache, q, pooled);
}

/**
 * The live vectors in slots `from` and after that pass the query's filter, scored as rankVectors
 * scores its pool, best first. Slots only ever grow (a replaced vector takes a new one), so these
 * are what a catch-up added since a ranking made when the cache had `from` slots.
 */
export function rankSlotsFrom(cache: VectorCache, query: VectorQuery, from: number): VectorMatch[] {
  const { size, layout, types, rooms, users, memory } = cache;
  const { typeMask, roomId, userId } = filterOf(cache, query);
  new Float32Array(memory.buffer, layout.query, cache.dimensions).set(query.vector);
  const pool = new Int32Array(memory.buffer, layout.kept, cache.capacity);
  let pooled = 0;
  for (let s = from; s < size; s++) {
    const type = types[s]!;
    if (type === DEAD || ((typeMask >>> type) & 1) === 0) continue;
    if (roomId !== 0 && rooms[s] !== roomId) continue;
    if (userId !== 0 && users[s] !== userId) continue;
    pool[pooled++] = s;
  }
  return pooled === 0 ? [] : scorePool(cache, query.vector, pooled);
}

/** The query's filter as the kernels take it: a type bit mask, room and user numbers (0: any). */
function filterOf(cache: VectorCache, query: VectorQuery) {
  let typeMask = 0;
  if (query.types && query.types.length > 0)
    for (const type of query.types) typeMask |= 1 << (TYPE_CODE.get(type) ?? 31);
  else typeMask = ~0;
  // A filter value the cache has never seen matches nothing (-1 is no slot's number).
  const roomId = query.roomId === undefined ? 0 : (cache.names.get(query.roomId) ?? -1);
  const userId = query.userId === undefined ? 0 : (cache.names.get(query.userId) ?? -1);
  return { typeMask, roomId, userId };
}

/** Exact cosine on the int8 values of the first `pooled` slots of the pool (query already in place). */
function scorePool(cache: VectorCache, q: Float32Array, pooled: number): VectorMatch[] {
  const { dimensions, layout, kernels, norms, ids } = cache;
  const pool = new Int32Array(cache.memory.buffer, layout.kept, pooled);
  let qNorm = 0;
  for (let d = 0; d < dimensions; d++) qNorm += q[d]! * q[d]!;
  qNorm = Math.sqrt(qNorm);
  kernels.dots(layout.kept, pooled, layout.vectors, dimensions, layout.query, layout.out);
  const dots = new Float64Array(cache.memory.buffer, layout.out, pooled);
  const scored: VectorMatch[] = new Array(pooled);
  for (let i = 0; i < pooled; i++) {
    const slot = pool[i]!;
    const denominator = norms[slot]! * qNorm;
    scored[i] = { id: ids[slot]!, score: denominator > 0 ? dots[i]! / denominator : 0 };
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
  const next = allocate(cache.capacity * 2, cache.dimensions, cache.words);
  next.codes.set(cache.codes);
  next.norms.set(cache.norms);
  next.rooms.set(cache.rooms);
  next.users.set(cache.users);
  next.types.set(cache.types);
  next.vectors.set(cache.vectors);
  Object.assign(cache, next);
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
