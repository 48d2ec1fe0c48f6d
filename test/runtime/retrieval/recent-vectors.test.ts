// The embedder that remembers its last texts' vectors (src/runtime/retrieval/recent-vectors.ts): a
// text asked again while its embedding is out, or after, costs no second call; a batch sends only
// the texts it has not seen, so a turn's stored message takes its query's vector; a failed call
// is not kept; the oldest texts make room for new ones.
import { describe, expect, it } from "vitest";
import { hashEmbed } from "../../../src/runtime/retrieval/hash-embedder.ts";
import { withRecentVectors } from "../../../src/runtime/retrieval/recent-vectors.ts";
import type { Embedder } from "../../../src/runtime/ports/vectors.ts";

function countingEmbedder(failFirst = false): Embedder & { calls: string[][]; id: string } {
  const calls: string[][] = [];
  return {
    id: "counting" as string,
    kind: "openai",
    dimensions: 384,
    maxBatch: 100,
    calls,
    async embed(inputs) {
      calls.push(inputs);
      if (failFirst && calls.length === 1) throw new Error("embedding API down");
      await new Promise((resolve) => setTimeout(resolve, 5));
      return inputs.map((text) => hashEmbed(text, 384));
    },
  };
}

describe("an embedder that remembers recent vectors", () => {
  it("embeds a text once, whether asked again while it is out or after", async () => {
    const inner = countingEmbedder();
    const embedder = withRecentVectors(inner);
    const [[a], [b]] = await Promise.all([
      embedder.embed(["where is the kayak kept?"]),
      embedder.embed(["where is the kayak kept?"]),
    ]);
    const [c] = await embedder.embed(["where is the kayak kept?"]);
    expect(a).toBeInstanceOf(Float32Array);
    expect(b).toBe(a);
    expect(c).toBe(a);
    await embedder.embed(["and the paddles?"]);
    expect(inner.calls).toEqual([["where is the kayak kept?"], ["and the paddles?"]]);
  });

  it("sends only the texts it has not seen, in one call, and answers in the caller's order", async () => {
    const inner = countingEmbedder();
    const embedder = withRecentVectors(inner);
    // The turn's query, then after the reply its stored message and the reply itself.
    const [query] = await embedder.embed(["we took the red kayak out"]);
    const [message, reply] = await embedder.embed([
      "we took the red kayak out",
      "Sounds windy!",
      "Sounds windy!",
    ]);
    expect(message).toBe(query);
    expect(reply).toEqual(hashEmbed("Sounds windy!", 384));
    expect(inner.calls).toEqual([["we took the red kayak out"], ["Sounds windy!"]]);
  });

  it("asks again after a failure: a failed embedding is not kept", async () => {
    const inner = countingEmbedder(true);
    const embedder = withRecentVectors(inner);
    await expect(embedder.embed(["sourdough starter?"])).rejects.toThrow("embedding API down");
    await expect(embedder.embed(["sourdough starter?"])).resolves.toHaveLength(1);
    expect(inner.calls).toEqual([["sourdough starter?"], ["sourdough starter?"]]);
  });

  it("forgets the least recently used text past its size, and serves a batch larger than it", async () => {
    const inner = countingEmbedder();
    const embedder = withRecentVectors(inner, 2);
    await embedder.embed(["a", "b"]);
    await embedder.embed(["a"]);
    await embedder.embed(["c"]);
    await embedder.embed(["a", "b"]);
    expect(inner.calls).toEqual([["a", "b"], ["c"], ["b"]]);
    expect(await embedder.embed(["x", "y", "z"])).toHaveLength(3);
  });

  it("keys vectors by the embedder that made them", async () => {
    const inner = countingEmbedder();
    const embedder = withRecentVectors(inner);
    await embedder.embed(["same words"]);
    inner.id = "another";
    await embedder.embed(["same words"]);
    expect(inner.calls).toHaveLength(2);
  });
});
