// The turn inspector's stored versions (src/db/stores/turn-inspection-shapes.ts): version 2 keeps
// an outline in D1 and the text apart, and the two join back into the whole record; a text that
// does not fit its record is left out; a version-1 row (the fixture, as D1 held it) still reads
// whole. Plain Node: the shapes need no platform.
import { describe, expect, it } from "vitest";
import {
  InspectionTextShape,
  joinText,
  keptOf,
  MAX_OUTLINE_BYTES,
  splitInspection,
  StoredTurnInspectionShape,
  TurnInspectionV1Shape,
} from "../../../src/db/stores/turn-inspection-shapes.ts";
import type { TurnInspection } from "../../../src/runtime/turn/turn-inspection.ts";
import versionOne from "../../fixtures/turn-inspection/version-1.json";

const whole: TurnInspection = TurnInspectionV1Shape.parse(versionOne) as TurnInspection;
/** What a stored value is after D1 or R2: JSON, read back. */
const roundTrip = <T>(value: T): unknown => JSON.parse(JSON.stringify(value));

describe("the turn inspector's stored record", () => {
  it("keeps in D1 no prompt text, tool arguments or results, only names, sizes and references", () => {
    const { record } = splitInspection(whole, "r2");
    const stored = JSON.stringify(record);
    for (const section of whole.sections) expect(stored).not.toContain(section.text);
    expect(stored).not.toContain("Europe/Paris");
    expect(stored).not.toContain("2026-11-27T17:42:21");
    expect(record.sections).toEqual([
      { name: "character", tokens: 14, chars: whole.sections[0]!.text.length },
      { name: "user-facts", tokens: 21, chars: whole.sections[1]!.text.length },
      { name: "knowledge", tokens: 19, chars: whole.sections[2]!.text.length },
      { name: "message", tokens: 8, chars: 30 },
    ]);
    expect(record.memories[1]).toEqual([
      "0d9a5a43-3c43-4b0f-9d7e-3a1de3f0a002",
      "fragment",
      0.03278688524590164,
      "knowledge",
      ["text", "vector"],
    ]);
    expect(record.tools[0]).toMatchObject({ name: "current_time", outputChars: 34 });
  });

  it("joins the outline and its text back into the record as it was built", () => {
    const { record, text } = splitInspection(whole, "r2");
    const stored = StoredTurnInspectionShape.parse(roundTrip(record));
    const kept = joinText(keptOf(stored), InspectionTextShape.parse(roundTrip(text)));
    const { version: _version, ...rest } = whole;
    expect(kept).toEqual({
      ...rest,
      text: "included",
      memoriesInText: false,
      sections: whole.sections.map((s) => ({ ...s, chars: s.text.length })),
    });
  });

  it("reads a model call kept before cached input tokens were counted as 0 cached tokens", () => {
    expect(versionOne.modelCalls[0]).not.toHaveProperty("cachedInputTokens");
    const { record } = splitInspection(whole, "none");
    const outline = roundTrip(record) as { modelCalls: Record<string, unknown>[] };
    for (const call of outline.modelCalls) delete call.cachedInputTokens;
    const kept = keptOf(StoredTurnInspectionShape.parse(outline));
    expect(kept.modelCalls.map((call) => call.cachedInputTokens)).toEqual(
      whole.modelCalls.map(() => 0),
    );
  });

  it("reads an outline without text when none was kept", () => {
    const { record } = splitInspection(whole, "none");
    const kept = keptOf(StoredTurnInspectionShape.parse(roundTrip(record)));
    expect(kept.text).toBe("none");
    expect(kept.sections.map(({ name, tokens }) => [name, tokens])).toEqual(
      whole.sections.map(({ name, tokens }) => [name, tokens]),
    );
    for (const section of kept.sections) expect(section).not.toHaveProperty("text");
    expect(kept.tools[0]).not.toHaveProperty("output");
    expect(kept.memories).toEqual(whole.memories);
    expect(kept.modelCalls).toEqual(whole.modelCalls);
  });

  it("leaves out a text that does not fit its record rather than show it against other sections", () => {
    const { record, text } = splitInspection(whole, "r2");
    const kept = keptOf(StoredTurnInspectionShape.parse(roundTrip(record)));
    const shifted = { ...text, sections: [...text.sections.slice(1), text.sections[0]!] };
    expect(joinText(kept, shifted).text).toBe("none");
    expect(joinText(kept, { ...text, tools: [] }).sections[0]).not.toHaveProperty("text");
  });

  it("moves the memories' references to the text when they would take D1 past 2 KB", () => {
    const facts = Array.from({ length: 60 }, (_, i) => ({
      id: `0d9a5a43-3c43-4b0f-9d7e-3a1de3f0${String(i).padStart(4, "0")}`,
      type: "fact" as const,
      score: null,
      provider: "user-facts",
      matchedBy: null,
    }));
    const many: TurnInspection = { ...whole, memories: facts };
    const { record, text } = splitInspection(many, "r2");
    expect(new TextEncoder().encode(JSON.stringify(record)).length).toBeLessThanOrEqual(
      MAX_OUTLINE_BYTES,
    );
    expect(record.memories).toBe("r2");
    const kept = keptOf(StoredTurnInspectionShape.parse(roundTrip(record)));
    expect(kept.memories).toEqual([]);
    expect(joinText(kept, InspectionTextShape.parse(roundTrip(text))).memories).toEqual(facts);
    // With no text kept there is nowhere else for them: they stay in D1.
    expect(splitInspection(many, "none").record.memories).toHaveLength(60);
  });

  it("reads a version-1 row whole, its text included", () => {
    const kept = keptOf(StoredTurnInspectionShape.parse(versionOne));
    expect(kept.text).toBe("included");
    expect(kept.sections.at(-1)).toEqual({
      name: "message",
      tokens: 8,
      text: "How much sun do tomatoes need?",
    });
    expect(kept.tools[0]).toMatchObject({ arguments: { timeZone: "Europe/Paris" } });
    expect(kept).not.toHaveProperty("version");
  });
});
