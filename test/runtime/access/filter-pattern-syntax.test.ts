// How a filter pattern RE2 would not read as meant is refused (src/runtime/access/
// filter-pattern-syntax.ts), in plain Node, through the schemas a config is saved and read with:
// a JavaScript regex literal ("/casino/i") is refused naming what to write, on Discord, Telegram
// and Slack alike, yet one saved before still loads; a lookaround or a backreference is refused
// saying RE2 has none, not with RE2's parser error ("invalid named capture").
import { describe, expect, it } from "vitest";
import {
  ChatFilterRules,
  filterVerdict,
  MessageFilterRules,
  StoredChatFilterRules,
  StoredMessageFilterRules,
} from "../../../src/runtime/access/message-filter.ts";

const NOW = Date.UTC(2026, 10, 28);
/** Discord's filter (per server) and Telegram's or Slack's (the client's), as saved. */
const SAVED = { discord: MessageFilterRules, "telegram and slack": ChatFilterRules };

/** Each refusal as `path: message`, as the 400 names it. */
function refusals(schema: typeof MessageFilterRules | typeof ChatFilterRules, patterns: string[]) {
  const parsed = schema.safeParse({ patterns });
  return parsed.error?.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`) ?? [];
}

describe("filter patterns: written like a JavaScript regex literal", () => {
  for (const [platform, schema] of Object.entries(SAVED)) {
    it(`refuses "/casino/i" on ${platform}, saying to write "casino"`, () => {
      const [refusal, ...more] = refusals(schema, ["cas[i1]no\\d+", "/casino/i"]);
      expect(more).toEqual([]);
      expect(refusal).toMatch(/^patterns\.1: written like a JavaScript regex literal/);
      expect(refusal).toContain('always case-insensitive, so write "casino"');
      expect(refusal).toContain('to look for the slashes themselves, write "[/]casino[/]i"');
    });
  }

  it("turns the flags RE2 has into its inline flags, and drops those always on or moot", () => {
    expect(refusals(MessageFilterRules, ["/^buy.+now/gms"])[0]).toContain('write "(?ms)^buy.+now"');
    expect(refusals(MessageFilterRules, ["/free\\s+nitro/giu"])[0]).toContain(
      'write "free\\s+nitro"',
    );
  });

  it("makes the pattern it suggests match what the literal meant, whatever the case", () => {
    const rules = MessageFilterRules.parse({ patterns: ["casino", "(?m)^buy"] });
    const check = (text: string) =>
      filterVerdict(rules, { text, accountCreatedAt: null, now: NOW });
    expect(check("best CASINO in town")).toBe("pattern");
    expect(check("hello\nBuy now")).toBe("pattern");
    expect(check("a quiet evening")).toBeNull();
  });

  it("accepts slashes that are not a literal's, and the suggested way to look for them", () => {
    const patterns = ["discord\\.com/invite/", "[/]casino[/]i", "a/b", "/r/\\w+"];
    expect(MessageFilterRules.parse({ patterns }).patterns).toEqual(patterns);
    expect(ChatFilterRules.parse({ patterns }).patterns).toEqual(patterns);
  });

  it("still loads one saved before, as written (it looks for the slashes, as it did)", () => {
    const saved = { patterns: ["/casino/i"] };
    expect(StoredMessageFilterRules.parse(saved)).toMatchObject(saved);
    expect(StoredChatFilterRules.parse(saved)).toMatchObject(saved);
    const rules = StoredMessageFilterRules.parse(saved);
    expect(filterVerdict(rules, { text: "casino", accountCreatedAt: null, now: NOW })).toBeNull();
  });
});

describe("filter patterns: what RE2 leaves out", () => {
  for (const [platform, schema] of Object.entries(SAVED)) {
    it(`refuses a lookbehind on ${platform} as a lookbehind, not as a named capture`, () => {
      for (const pattern of ["(?<!not )spam", "(?<=free )nitro"]) {
        const [refusal, ...more] = refusals(schema, [pattern]);
        expect(more).toEqual([]);
        expect(refusal).toContain(
          "patterns.0: not an RE2 pattern: lookbehind ((?<=…), (?<!…)) is not supported: ",
        );
        expect(refusal).toContain("no lookaround or backreferences");
        expect(refusal).not.toContain("named capture");
      }
    });
  }

  it("refuses a lookahead and a backreference naming them", () => {
    expect(refusals(MessageFilterRules, ["spam(?!mer)"])[0]).toContain(
      "lookahead ((?=…), (?!…)) is not supported",
    );
    expect(refusals(MessageFilterRules, ["(?=x)"])[0]).toContain("lookahead");
    expect(refusals(MessageFilterRules, ["(a)\\1"])[0]).toContain(
      "backreferences (\\1, \\k<name>) are not supported",
    );
  });

  it("keeps RE2's own words for other mistakes, and accepts a named group", () => {
    expect(refusals(MessageFilterRules, ["(casino"])[0]).toBe(
      "patterns.0: not an RE2 pattern: error parsing regexp: missing closing ): `(casino`",
    );
    expect(refusals(MessageFilterRules, ["(?<brand>nitro)", "(?P<x>y)"])).toEqual([]);
  });
});
