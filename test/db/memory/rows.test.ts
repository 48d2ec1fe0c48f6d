// A memory row's JSON columns are checked without zod for their common shapes
// (src/db/memory/rows.ts); the quick check must agree with the zod schemas on every value: accept
// what they accept with the same result, refuse what they refuse.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MemoryContentRow, parseContent, parseMetadata } from "../../../src/db/memory/rows.ts";

const zodContent = (value: unknown) => {
  const parsed = MemoryContentRow.safeParse(value);
  return parsed.success ? parsed.data : null;
};
const zodMetadata = (value: unknown) => {
  const parsed = z.record(z.string(), z.unknown()).safeParse(value);
  return parsed.success ? parsed.data : null;
};

/** Values shaped like stored content, with each field sometimes of a wrong type. */
const contentLike = fc.record(
  {
    text: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    role: fc.oneof(fc.constantFrom("user", "agent", "system"), fc.constant(null), fc.integer()),
    source: fc.oneof(fc.string(), fc.integer(), fc.constant(null)),
    userName: fc.oneof(fc.string(), fc.boolean()),
    inReplyTo: fc.oneof(fc.string(), fc.constant(null)),
    actions: fc.oneof(
      fc.array(fc.string()),
      fc.array(fc.oneof(fc.string(), fc.integer())),
      fc.string(),
    ),
    attachments: fc.oneof(
      fc.array(
        fc.record(
          {
            url: fc.oneof(fc.string(), fc.integer()),
            contentType: fc.string(),
            extra: fc.string(),
          },
          { requiredKeys: ["url"] },
        ),
      ),
      fc.constant(null),
    ),
    other: fc.jsonValue(),
  },
  { requiredKeys: [] },
);

describe("memory row JSON columns", () => {
  it("content: the quick check gives zod's answer for any JSON value", () => {
    fc.assert(
      fc.property(fc.oneof(contentLike, fc.jsonValue()), (value) => {
        // Through JSON, as a row's column arrives.
        const stored: unknown = JSON.parse(JSON.stringify(value) ?? "null");
        expect(parseContent(stored)).toEqual(zodContent(stored));
      }),
      { numRuns: 2_000 },
    );
  });

  it("metadata: the quick check gives zod's answer for any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const stored: unknown = JSON.parse(JSON.stringify(value) ?? "null");
        expect(parseMetadata(stored)).toEqual(zodMetadata(stored));
      }),
      { numRuns: 2_000 },
    );
    expect(parseMetadata(JSON.parse('{"__proto__": {"x": 1}, "a": 2}'))).toEqual(
      zodMetadata(JSON.parse('{"__proto__": {"x": 1}, "a": 2}')),
    );
  });

  it("content: the common shapes pass, the wrong ones fail", () => {
    expect(parseContent({ text: "hi", role: "user", source: "api" })).toEqual({
      text: "hi",
      role: "user",
      source: "api",
    });
    expect(parseContent({ text: "hi", role: "bot" })).toBeNull();
    expect(parseContent({ role: "user" })).toBeNull();
    expect(parseContent([])).toBeNull();
    expect(parseContent(undefined)).toBeNull();
  });
});
