// The filter before the model (src/runtime/access/message-filter.ts), in plain Node: each rule
// declines what it should and nothing else, words are whole words in any script, and a pattern
// that would make a backtracking engine run for ages is answered by RE2 in linear time.
import { describe, expect, it } from "vitest";
import {
  ChatFilterRules,
  filterVerdict,
  MessageFilterRules,
} from "../../../src/runtime/access/message-filter.ts";

const NOW = Date.UTC(2026, 10, 28);
const DAY_MS = 86_400_000;

const rules = (input: Record<string, unknown>) => MessageFilterRules.parse(input);
const verdict = (
  input: Record<string, unknown>,
  text: string,
  accountCreatedAt: number | null = null,
) => filterVerdict(rules(input), { text, accountCreatedAt, now: NOW });

describe("message filter: words", () => {
  it("declines a listed word whatever its case", () => {
    expect(verdict({ words: ["Casino"] }, "best CASINO in town")).toBe("word");
    expect(verdict({ words: ["casino"] }, "a quiet evening")).toBeNull();
  });

  it("never matches a word inside another word", () => {
    const words = { words: ["ass", "class"] };
    expect(verdict(words, "a classic passage about assessments")).toBeNull();
    expect(verdict(words, "first class!")).toBe("word");
    expect(verdict(words, "(ass)")).toBe("word");
  });

  it("reads words in any script, with accents and full-width forms", () => {
    expect(verdict({ words: ["спам"] }, "Это СПАМ, правда")).toBe("word");
    expect(verdict({ words: ["спам"] }, "спамер")).toBeNull();
    expect(verdict({ words: ["café"] }, "Un CAFÉ s'il vous plaît")).toBe("word");
    expect(verdict({ words: ["buy"] }, "ＢＵＹ now")).toBe("word");
    expect(verdict({ words: ["東京"] }, "明日は 東京 へ")).toBe("word");
  });

  it("matches a phrase as consecutive words, and a symbol anywhere", () => {
    const phrase = { words: ["free nitro"] };
    expect(verdict(phrase, "get FREE   Nitro here")).toBe("word");
    expect(verdict(phrase, "nitro is not free")).toBeNull();
    expect(verdict({ words: ["🍆"] }, "look 🍆🍆")).toBe("word");
  });
});

describe("message filter: patterns (RE2)", () => {
  it("declines a message a pattern finds, case-insensitively", () => {
    expect(verdict({ patterns: ["b[i1]tc[o0]in\\s+giveaway"] }, "BITC0IN   Giveaway!")).toBe(
      "pattern",
    );
    expect(verdict({ patterns: ["^hello$"] }, "hello there")).toBeNull();
  });

  it("answers a pathological pattern on a long input (no backtracking)", () => {
    const text = `${"a".repeat(50_000)}b`;
    // A backtracking engine tries every split of the a's before giving up on `$`.
    expect(verdict({ patterns: ["(a+)+$"] }, text)).toBeNull();
    expect(verdict({ patterns: ["(a+)+b$"] }, text)).toBe("pattern");
  });

  it("refuses what RE2 cannot match in linear time (a backreference)", () => {
    expect(MessageFilterRules.safeParse({ patterns: ["(a)\\1"] }).success).toBe(false);
  });
});

describe("message filter: links", () => {
  it("declines more links than maxLinks, counting bare invites", () => {
    const two = "see https://example.com/a and discord.gg/abcd";
    expect(verdict({ maxLinks: 2 }, two)).toBeNull();
    expect(verdict({ maxLinks: 1 }, two)).toBe("links");
    expect(verdict({ maxLinks: 0 }, "join discord.com/invite/xyz")).toBe("links");
  });

  it("counts an invite written as a full URL once, and no link in plain words", () => {
    expect(verdict({ maxLinks: 1 }, "https://discord.gg/abcd")).toBeNull();
    expect(
      verdict({ maxLinks: 0 }, "http is a protocol; mydiscord.gg is not an invite"),
    ).toBeNull();
  });
});

describe("message filter: account age", () => {
  it("declines an account younger than minAccountAgeDays", () => {
    expect(verdict({ minAccountAgeDays: 7 }, "hi", NOW - 2 * DAY_MS)).toBe("account_age");
    expect(verdict({ minAccountAgeDays: 7 }, "hi", NOW - 8 * DAY_MS)).toBeNull();
  });

  it("lets a message through when the platform does not say the account's age", () => {
    expect(verdict({ minAccountAgeDays: 7 }, "hi", null)).toBeNull();
  });
});

describe("message filter: rule sets", () => {
  it("declines nothing with no rules", () => {
    expect(verdict({}, "https://a.test https://b.test free nitro", NOW)).toBeNull();
  });

  it("gives the same verdicts for a fresh copy of the same rules", () => {
    const input = { words: ["spam"], patterns: ["x+y"] };
    for (let i = 0; i < 3; i++) {
      expect(verdict(input, "more SPAM")).toBe("word");
      expect(verdict(input, "xxxy")).toBe("pattern");
    }
  });

  it("has no account age, action or log channel for Telegram and Slack", () => {
    const parsed = ChatFilterRules.safeParse({
      words: ["x"],
      minAccountAgeDays: 3,
      action: "delete",
    });
    expect(parsed.error?.issues.map((issue) => issue.path.join("."))).toEqual([
      "minAccountAgeDays",
      "action",
    ]);
    expect(ChatFilterRules.parse({ words: ["x"], maxLinks: 2 })).toEqual({
      words: ["x"],
      patterns: [],
      maxLinks: 2,
    });
  });
});
