// Hybrid search keeps its last query texts' vectors (src/memory/hybrid-search.ts): a repeated
// question, or one asked again while or after its first embedding was out (a turn that stopped
// waiting for it at the budget), costs one embedding call; a failed embedding is not kept.
import { env } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/d1";
import { describe, expect, it } from "vitest";
import { createHybridSearch } from "../../src/memory/hybrid-search.ts";
import { createLocalVectorIndex } from "../../src/memory/local-vector-index.ts";
import { hashEmbed } from "../../src/runtime/retrieval/hash-embedder.ts";
import type { Embedder } from "../../src/runtime/ports/vectors.ts";

function countingEmbedder(failFirst = false): Embedder & { texts: string[] } {
  const texts: string[] = [];
  return {
    id: "counting",
    kind: "openai",
    dimensions: 384,
    maxBatch: 100,
    texts,
    async embed(inputs) {
      texts.push(...inputs);
      if (failFirst && texts.length === 1) throw new Error("embedding API down");
      await new Promise((resolve) => setTimeout(resolve, 5));
      return inputs.map((text) => hashEmbed(text, 384));
    },
  };
}

function retrieverWith(embedder: Embedder) {
  const db = drizzle(env.DB);
  return createHybridSearch({
    db,
    index: createLocalVectorIndex(db),
    embedder,
    log: () => undefined,
  });
}

describe("query vectors kept for repeated texts", () => {
  it("embeds a text once, whether asked again while it is out or after", async () => {
    const embedder = countingEmbedder();
    const retriever = retrieverWith(embedder);
    const [a, b] = await Promise.all([
      retriever.embedQuery("where is the kayak kept?"),
      retriever.embedQuery("where is the kayak kept?"),
    ]);
    const c = await retriever.embedQuery("where is the kayak kept?");
    expect(a).not.toBeNull();
    expect(b).toBe(a);
    expect(c).toBe(a);
    await retriever.embedQuery("and the paddles?");
    expect(embedder.texts).toEqual(["where is the kayak kept?", "and the paddles?"]);
  });

  it("asks again after a failure: a failed embedding is not kept", async () => {
    const embedder = countingEmbedder(true);
    const retriever = retrieverWith(embedder);
    expect(await retriever.embedQuery("sourdough starter?")).toBeNull();
    expect(await retriever.embedQuery("sourdough starter?")).not.toBeNull();
    expect(embedder.texts).toEqual(["sourdough starter?", "sourdough starter?"]);
  });
});
