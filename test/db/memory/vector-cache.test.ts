// The local vector index's in-memory ranking (src/db/memory/vector-cache.ts), on the vectors the
// offline stack really makes: the hashed embedder's, which are sparse. Raw sign bits ranked these
// badly (short texts share zeros with everything); the rotated sign codes must keep the exact
// cosine top 10 above the 4,000-vector threshold where ranking stops being exhaustive.
import { describe, expect, it } from "vitest";
import {
  createVectorCache,
  EXACT_BELOW,
  putVector,
  quantize,
  rankVectors,
  removeVector,
} from "../../../src/db/memory/vector-cache.ts";
import { hashEmbed } from "../../../src/runtime/retrieval/hash-embedder.ts";
import type { MemoryType } from "../../../src/runtime/ports/memory.ts";

const DIMS = 384;
const NAMES = ["Ana", "Ben", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jon"];
const THINGS = [
  "a rescue dog",
  "sourdough bread",
  "a half marathon",
  "the spare room",
  "a pottery class",
  "the old bicycle",
  "tomatoes",
  "a choir",
  "a new flat",
  "a long novel",
  "rock climbing",
  "the harbour",
  "a kayak",
  "a telescope",
];
const PLACES = [
  "in Lisbon",
  "near the lake",
  "at work",
  "in Kyoto",
  "downtown",
  "on the coast",
  "at the library",
];

/** Deterministic everyday sentences (a small LCG, so every run ranks the same vectors). */
function sentences(count: number): string[] {
  let state = 7;
  const next = (n: number) => {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    return (state >>> 8) % n;
  };
  return Array.from(
    { length: count },
    () =>
      `${NAMES[next(NAMES.length)]}: I tried ${THINGS[next(THINGS.length)]} ${PLACES[next(PLACES.length)]}, it was day ${next(500)}.`,
  );
}

function exactTop(
  cache: ReturnType<typeof createVectorCache>,
  query: Float32Array,
  k: number,
): string[] {
  const scored: Array<{ id: string; score: number }> = [];
  for (let slot = 0; slot < cache.size; slot++) {
    let dot = 0;
    for (let d = 0; d < DIMS; d++) dot += query[d]! * cache.vectors[slot * DIMS + d]!;
    scored.push({ id: cache.ids[slot]!, score: dot / cache.norms[slot]! });
  }
  return scored
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .map((s) => s.id);
}

describe("vector cache ranking", () => {
  const texts = sentences(12_000);
  const cache = createVectorCache(DIMS);
  const types: MemoryType[] = ["message", "fact", "summary"];
  for (const [i, text] of texts.entries())
    putVector(
      cache,
      `m${i}`,
      types[i % 3]!,
      `room-${i % 40}`,
      `user-${i % 25}`,
      quantize(hashEmbed(text, DIMS)),
    );

  it("keeps at least 95% of the exact cosine top 10 of 12,000 hashed-embedder vectors", () => {
    expect(cache.live).toBeGreaterThan(EXACT_BELOW);
    const queries = [
      "Who tried a rescue dog near the lake?",
      "Chen pottery class in Kyoto",
      "half marathon downtown",
      "Did Ines go to a choir at the library?",
      "sourdough bread on the coast",
    ];
    let found = 0;
    for (const text of queries) {
      const query = hashEmbed(text, DIMS);
      const exact = exactTop(cache, query, 10);
      const ranked = rankVectors(cache, { agentId: "a", vector: query, topK: 10 })
        .slice(0, 10)
        .map((m) => m.id);
      found += exact.filter((id) => ranked.includes(id)).length;
    }
    expect(found / (queries.length * 10)).toBeGreaterThanOrEqual(0.95);
  });

  it("scores each match with the exact cosine of its int8 values (the WebAssembly dot products)", () => {
    const query = hashEmbed("Who tried a rescue dog near the lake?", DIMS);
    let queryNorm = 0;
    for (let d = 0; d < DIMS; d++) queryNorm += query[d]! * query[d]!;
    const matches = rankVectors(cache, { agentId: "a", vector: query, topK: 30 });
    expect(matches.length).toBeGreaterThanOrEqual(600);
    for (const match of matches) {
      const slot = Number(match.id.slice(1));
      let dot = 0;
      for (let d = 0; d < DIMS; d++) dot += query[d]! * cache.vectors[slot * DIMS + d]!;
      expect(match.score).toBeCloseTo(dot / (cache.norms[slot]! * Math.sqrt(queryNorm)), 12);
    }
  });

  it("returns only vectors that pass the type, room and user filters, best first", () => {
    const query = hashEmbed("Ana tried tomatoes in Lisbon", DIMS);
    const matches = rankVectors(cache, {
      agentId: "a",
      vector: query,
      topK: 10,
      types: ["fact"],
      roomId: "room-7",
      userId: "user-7",
    });
    expect(matches.length).toBeGreaterThan(0);
    for (const match of matches) {
      const i = Number(match.id.slice(1));
      expect([types[i % 3], `room-${i % 40}`, `user-${i % 25}`]).toEqual([
        "fact",
        "room-7",
        "user-7",
      ]);
    }
    expect(matches.map((m) => m.score)).toEqual(
      [...matches.map((m) => m.score)].sort((a, b) => b - a),
    );
    expect(
      rankVectors(cache, { agentId: "a", vector: query, topK: 10, roomId: "no-such-room" }),
    ).toEqual([]);
  });

  it("drops removed vectors and lets a re-put id replace its old vector", () => {
    const small = createVectorCache(DIMS);
    putVector(
      small,
      "x",
      "fact",
      null,
      null,
      quantize(hashEmbed("the telescope on the roof", DIMS)),
    );
    putVector(small, "y", "fact", null, null, quantize(hashEmbed("a kayak on the lake", DIMS)));
    const telescope = hashEmbed("telescope", DIMS);
    expect(rankVectors(small, { agentId: "a", vector: telescope, topK: 1 })[0]!.id).toBe("x");
    removeVector(small, "x");
    expect(
      rankVectors(small, { agentId: "a", vector: telescope, topK: 5 }).map((m) => m.id),
    ).toEqual(["y"]);
    putVector(small, "y", "fact", null, null, quantize(hashEmbed("my telescope", DIMS)));
    const after = rankVectors(small, { agentId: "a", vector: telescope, topK: 5 });
    expect(after.map((m) => m.id)).toEqual(["y"]);
    expect(after[0]!.score).toBeGreaterThan(0.3);
  });
});
