// The filter before the model (src/runtime/access/message-filter.ts), in plain Node: each rule
// declines what it should and nothing else, words are whole words in any script, a pattern that
// would make a backtracking engine run for ages is answered by RE2 in linear time, and what the
// patterns may compile to is bounded (filter-cost.ts): refused when saved, suspended when read back.
import { describe, expect, it } from "vitest";
import { MAX_PATTERN_INSTRUCTIONS } from "../../../src/runtime/access/filter-cost.ts";
import {
  ChatFilterRules,
  filterVerdict,
  MessageFilterRules,
  StoredChatFilterRules,
  StoredMessageFilterRules,
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

  it("tells apart phrases that share their first words", () => {
    const phrases = { words: ["free nitro now", "free nitro here", "buy"] };
    expect(verdict(phrases, "FREE nitro HERE!")).toBe("word");
    expect(verdict(phrases, "free nitro now")).toBe("word");
    expect(verdict(phrases, "free nitro")).toBeNull();
    expect(verdict(phrases, "free nitro later, nitro here")).toBeNull();
  });

  it("finds a phrase among 500 that share a start, on 2,000 words, by walking them together", () => {
    // Compared one by one, this took 427 ms: every "a" tried 500 phrases of 49 words.
    const words = Array.from({ length: 500 }, (_, i) => `${"a ".repeat(48)}b${i}`.slice(0, 100));
    const text = "a ".repeat(2_000);
    expect(verdict({ words }, text)).toBeNull();
    expect(verdict({ words }, `${text}b500 ${text}`)).toBeNull();
    expect(verdict({ words }, `x ${"a ".repeat(48)}b499`)).toBe("word");
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

/** The rule set that took 118 s of CPU on one 4,000-character message when each was allowed. */
const HOSTILE = Array.from({ length: 100 }, () => "[\\p{L}\\p{N}]{900}x");

describe("message filter: what patterns may cost", () => {
  it("refuses patterns that compile past the cost bound, naming each and the bound", () => {
    const parsed = MessageFilterRules.safeParse({ patterns: HOSTILE });
    expect(parsed.success).toBe(false);
    const issues = parsed.error!.issues;
    expect(issues).toHaveLength(100);
    expect(issues[0]!.path.join(".")).toBe("patterns.0");
    expect(issues[0]!.message).toBe(
      "compiles to 903 RE2 instructions (a counted repetition such as {900} is written out once " +
        `per repeat); a filter's patterns may compile to ${MAX_PATTERN_INSTRUCTIONS} in all, so ` +
        "that no message takes long to check",
    );
  });

  it("counts the patterns together, and names the one that passes the bound", () => {
    const thirty = "[\\p{L}\\p{N}]{27}x"; // 30 instructions
    expect(MessageFilterRules.safeParse({ patterns: Array(5).fill(thirty) }).success).toBe(true);
    const parsed = MessageFilterRules.safeParse({ patterns: [...Array(5).fill(thirty), "spam"] });
    expect(parsed.error?.issues.map((issue) => issue.path.join("."))).toEqual(["patterns.5"]);
    expect(parsed.error?.issues[0]?.message).toContain("the patterns before it take 150");
  });

  it("keeps the docs' patterns and a realistic set well within it", () => {
    const patterns = [
      "b[i1]tc[o0]in\\s+giveaway",
      "^(?:\\w+\\s+){0,2}@everyone",
      "fr[e3]{2}\\s*nitro",
      "(?:https?://)?(?:www\\.)?discord(?:app)?\\.(?:gg|com/invite)/[a-z0-9-]+",
      "\\b(?:buy|cheap|free)\\s+(?:followers|likes|views)\\b",
    ];
    expect(MessageFilterRules.parse({ patterns }).patterns).toEqual(patterns);
  });

  it("ignores a `suspended` list sent with rules: it is worked out from the patterns", () => {
    const sent = {
      patterns: ["x+y"],
      suspended: [{ index: 0, pattern: "x+y", reason: "made up" }],
    };
    expect(MessageFilterRules.parse(sent)).not.toHaveProperty("suspended");
  });
});

describe("message filter: rules saved before the cost bound", () => {
  const saved = { words: ["spam"], patterns: ["casino\\d+", ...HOSTILE.slice(0, 3), "scam"] };

  it("loads them, suspending only the patterns past the bound, each with its reason", () => {
    const rules = StoredMessageFilterRules.parse(saved);
    // Nothing is dropped: the patterns are kept as written.
    expect(rules.patterns).toEqual(saved.patterns);
    expect(rules.suspended?.map(({ index, pattern }) => [index, pattern])).toEqual([
      [1, HOSTILE[0]],
      [2, HOSTILE[0]],
      [3, HOSTILE[0]],
    ]);
    expect(rules.suspended?.[0]?.reason).toContain("compiles to 903 RE2 instructions");
  });

  it("applies the rest, before and after the suspended ones, and skips those", () => {
    const rules = StoredMessageFilterRules.parse(saved);
    const check = (text: string) =>
      filterVerdict(rules, { text, accountCreatedAt: null, now: NOW });
    expect(check("CASINO777 tonight")).toBe("pattern");
    expect(check("a scam, clearly")).toBe("pattern");
    expect(check("more spam")).toBe("word");
    // What only a suspended pattern finds passes, and a long message is checked at once.
    expect(check(`${"b".repeat(900)}x`)).toBeNull();
    expect(check("abcdefghijklmnopqrstuvwyz0123456789".repeat(115).slice(0, 4_000))).toBeNull();
  });

  it("is the same for rules given without the stored schema (the verdict skips them itself)", () => {
    expect(verdict({ patterns: ["zzz"] }, "zzz")).toBe("pattern");
    const raw = { words: [], patterns: [...HOSTILE.slice(0, 2), "scam"] };
    expect(filterVerdict(raw, { text: "scam", accountCreatedAt: null, now: NOW })).toBe("pattern");
    expect(
      filterVerdict(raw, { text: `${"b".repeat(900)}x`, accountCreatedAt: null, now: NOW }),
    ).toBeNull();
  });

  it("does the same for a Telegram or Slack filter: refused when saved, suspended when read", () => {
    const chat = { patterns: ["casino\\d+", HOSTILE[0]] };
    expect(ChatFilterRules.safeParse(chat).error?.issues.map((i) => i.path.join("."))).toEqual([
      "patterns.1",
    ]);
    expect(StoredChatFilterRules.parse(chat).suspended?.map((s) => s.index)).toEqual([1]);
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
