// Re-ranking of fused hits by what their rows say (src/runtime/retrieval/rerank.ts): a hit lifted
// by the best other hit of its conversation; after neighbour expansion, the named member's
// messages and memories of a named month first, and messages that say little last; scores kept
// within 0..1.
import { describe, expect, it } from "vitest";
import type { Memory } from "../../../src/runtime/ports/memory.ts";
import {
  conversationsOf,
  INFORMATIVE_WORDS,
  informativeness,
  rerankHits,
  rerankResults,
  SESSION_GAP_MS,
  speakerNamedIn,
} from "../../../src/runtime/retrieval/rerank.ts";

const DAY_MS = 24 * 60 * 60 * 1000;
const JUNE_2023 = Date.UTC(2023, 5, 10, 12);
const JULY_2023 = Date.UTC(2023, 6, 10, 12);

function message(id: string, fields: Partial<Memory> & { userName?: string } = {}): Memory {
  const { userName, ...rest } = fields;
  return {
    id,
    type: "message",
    agentId: "a1",
    roomId: "general",
    userId: userName?.toLowerCase() ?? "u",
    content: { text: id, ...(userName ? { userName } : {}) },
    metadata: {},
    createdAt: JUNE_2023,
    ...rest,
  };
}

const weights = { session: 0.2, speaker: 0.2, month: 1, length: 0 };

describe("conversations", () => {
  it("splits a room's messages where they are further apart than the gap, and keeps rooms apart", () => {
    const memories = [
      message("a", { createdAt: 0 }),
      message("b", { createdAt: 60_000 }),
      message("c", { createdAt: 60_000 + SESSION_GAP_MS + 1 }),
      message("d", { createdAt: 0, roomId: "other" }),
      message("e", { type: "fact", roomId: null }),
    ];
    const [a, b, c, d, e] = conversationsOf(memories);
    expect(a).toBe(b);
    expect(c).not.toBe(a);
    expect(d).not.toBe(a);
    expect(e).toBe(-1);
  });
});

describe("conversation support", () => {
  it("puts a hit whose conversation has another strong hit above an equal hit alone in its own", () => {
    const hits = [
      { memory: message("alone", { roomId: "r1" }), score: 0.5 },
      { memory: message("paired", { roomId: "r2" }), score: 0.5 },
      { memory: message("partner", { roomId: "r2", createdAt: JUNE_2023 + 1000 }), score: 0.6 },
    ];
    const ranked = rerankHits(hits, weights).map((hit) => hit.memory.id);
    expect(ranked.indexOf("paired")).toBeLessThan(ranked.indexOf("alone"));
  });

  it("keeps scores within 0..1 and changes nothing at weight 0", () => {
    const hits = [
      { memory: message("x"), score: 1 },
      { memory: message("y", { createdAt: JUNE_2023 + 1000 }), score: 1 },
    ];
    expect(rerankHits(hits, weights).every((hit) => hit.score <= 1)).toBe(true);
    expect(rerankHits(hits, { ...weights, session: 0 })).toBe(hits);
  });
});

describe("named members and months", () => {
  it("matches a member by any word of their name, in any case, possessive included", () => {
    const named = speakerNamedIn("What is Anna's favourite book?")!;
    expect(named(message("m", { userName: "Anna Berg" }))).toBe(true);
    expect(named(message("m", { userName: "Bob" }))).toBe(false);
    expect(speakerNamedIn("?")).toBeNull();
  });

  it("puts the named member's message above another's that scored a little higher", () => {
    const results = [
      { memory: message("bob", { userName: "Bob" }), score: 0.55 },
      { memory: message("anna", { userName: "Anna" }), score: 0.5 },
    ];
    const ranked = rerankResults(results, "What did Anna adopt?", weights);
    expect(ranked.map((hit) => hit.memory.id)).toEqual(["anna", "bob"]);
    expect(ranked.every((hit) => hit.score <= 1)).toBe(true);
  });

  it("keeps a far better match by another member first (the question may name the wrong person)", () => {
    const results = [
      { memory: message("bob", { userName: "Bob" }), score: 0.9 },
      { memory: message("anna", { userName: "Anna" }), score: 0.5 },
    ];
    const ranked = rerankResults(results, "What did Anna adopt?", weights);
    expect(ranked[0]!.memory.id).toBe("bob");
  });

  it("puts memories of a month the question names first", () => {
    const results = [
      { memory: message("july", { createdAt: JULY_2023 }), score: 0.8 },
      { memory: message("june", { createdAt: JUNE_2023 }), score: 0.5 },
      { memory: message("june-2022", { createdAt: JUNE_2023 - 365 * DAY_MS }), score: 0.45 },
    ];
    const ranked = rerankResults(results, "Where did we camp in June 2023?", weights);
    expect(ranked.map((hit) => hit.memory.id)).toEqual(["june", "july", "june-2022"]);
  });

  it("leaves the order alone when the question names no member and no month", () => {
    const results = [
      { memory: message("a", { userName: "Anna" }), score: 0.5 },
      { memory: message("b", { userName: "Bob" }), score: 0.6 },
    ];
    const ranked = rerankResults(results, "what about the puppy", weights);
    expect(ranked.map((hit) => hit.memory.id)).toEqual(["b", "a"]);
  });
});

describe("messages that say little", () => {
  const long =
    "Signed up for a pottery class yesterday: therapy, honestly. Clay, glazes, wheels, kilns, " +
    "teachers, neighbours, mugs, bowls, vases, plates, colours, patience, mistakes, laughter, " +
    "Tuesdays and Thursdays downtown.";
  const withText = (id: string, text: string, fields: Partial<Memory> = {}) => {
    const memory = message(id, fields);
    return { ...memory, content: { ...memory.content, text } };
  };
  const lengthWeights = { ...weights, length: 0.3 };

  it("counts a message of enough content words in full, a shorter one less, and other memories in full", () => {
    expect(informativeness(withText("long", long), 0.3)).toBe(1);
    const short = informativeness(withText("short", "Thanks, Anna!"), 0.3);
    expect(short).toBeGreaterThan(0);
    expect(short).toBeLessThan(1);
    expect(informativeness(withText("fact", "Anna: vegan", { type: "fact" }), 0.3)).toBe(1);
    expect(informativeness(withText("short", "Thanks, Anna!"), 0)).toBe(1);
    expect(INFORMATIVE_WORDS).toBeGreaterThan(1);
  });

  it("puts a message that says something above a short reply that scored a little higher", () => {
    const results = [
      { memory: withText("thanks", "Thanks, Anna!"), score: 0.55 },
      { memory: withText("news", long), score: 0.5 },
    ];
    const ranked = rerankResults(results, "what does anna do for fun", lengthWeights);
    expect(ranked.map((hit) => hit.memory.id)).toEqual(["news", "thanks"]);
    expect(ranked.every((hit) => hit.score <= 1)).toBe(true);
  });

  it("keeps a far better match of a few words first", () => {
    const results = [
      { memory: withText("puppy", "Adopted a puppy today!"), score: 0.9 },
      { memory: withText("news", long), score: 0.5 },
    ];
    const ranked = rerankResults(results, "what did anna adopt", lengthWeights);
    expect(ranked[0]!.memory.id).toBe("puppy");
  });
});
