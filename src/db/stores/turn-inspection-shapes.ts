// The turn inspector's record as D1 keeps it, and how it is split and joined again. Version 1
// rows hold the whole record (~6-18 KB: the prompt's text, tool arguments and results). Version 2
// keeps in D1 only what the outline needs (section names and sizes, memory references, tool and
// model timing: about 1 KB) and puts the bulky text in one gzip object in R2
// (turn-inspection-text.ts); the route joins them back into the same view.
import { z } from "zod";
import { MEMORY_TYPES } from "../schema.ts";
import type {
  InspectedMemory,
  InspectedTool,
  TurnInspection,
} from "../../runtime/turn/turn-inspection.ts";

const MatchedByShape = z.array(z.enum(["text", "vector", "neighbour"]));
const MemoryTypeShape = z.enum(MEMORY_TYPES);

/** A tool call as both versions keep it; version 1 adds its text, version 2 the text's sizes. */
const ToolCallShape = z.object({
  id: z.string(),
  name: z.string(),
  ok: z.boolean(),
  cached: z.boolean(),
  startMs: z.number().nullable(),
  durationMs: z.number(),
  model: z.string(),
});

const ModelCallShape = z.object({
  model: z.string(),
  responseModel: z.string().nullable(),
  startMs: z.number(),
  durationMs: z.number(),
  inputTokens: z.number(),
  // Added with prompt-cache accounting (issue 56): rows written before it read as 0.
  cachedInputTokens: z.number().default(0),
  outputTokens: z.number(),
  finishReason: z.string().nullable(),
  error: z.string().nullable(),
});

const Ids = {
  turnId: z.string(),
  agentId: z.string(),
  roomId: z.string(),
  userId: z.string(),
  startedAt: z.number(),
  durationMs: z.number(),
  resumed: z.boolean(),
};

/** Version 1: the whole record as src/runtime/turn/turn-inspection.ts builds it. */
export const TurnInspectionV1Shape = z.object({
  version: z.literal(1),
  ...Ids,
  sections: z.array(z.object({ name: z.string(), tokens: z.number(), text: z.string() })),
  memories: z.array(
    z.object({
      id: z.string(),
      type: MemoryTypeShape,
      score: z.number().nullable(),
      provider: z.string(),
      matchedBy: MatchedByShape.nullable(),
    }),
  ),
  tools: z.array(ToolCallShape.extend({ arguments: z.unknown(), output: z.string() })),
  modelCalls: z.array(ModelCallShape),
});

/** Where a version-2 record's text is: one R2 object, or nowhere (not sampled, or R2 failed). */
export type TextPlace = "r2" | "none";

/** D1 keeps at most this much of a turn whose text goes to R2 (the memories move there too). */
export const MAX_OUTLINE_BYTES = 2_048;

/**
 * A memory used, as a tuple `[id, type, score, provider, matchedBy]`: a turn may use dozens (the
 * person's facts), and named fields would double their cost.
 */
const MemoryRefShape = z.tuple([
  z.string(),
  MemoryTypeShape,
  z.number().nullable(),
  z.string(),
  MatchedByShape.nullable(),
]);
type MemoryRef = z.infer<typeof MemoryRefShape>;

/**
 * Version 2, the compact record. `memories` is "r2" when the references would take the outline
 * past MAX_OUTLINE_BYTES (a person with many facts): they are then in the R2 object. `chars` are
 * the lengths of the text kept in R2, so a text that does not match its record is refused.
 */
export const TurnInspectionV2Shape = z.object({
  version: z.literal(2),
  ...Ids,
  text: z.enum(["r2", "none"]),
  sections: z.array(z.object({ name: z.string(), tokens: z.number(), chars: z.number() })),
  memories: z.union([z.array(MemoryRefShape), z.literal("r2")]),
  tools: z.array(ToolCallShape.extend({ argumentsChars: z.number(), outputChars: z.number() })),
  modelCalls: z.array(ModelCallShape),
});
export type TurnInspectionV2 = z.infer<typeof TurnInspectionV2Shape>;

/** Every stored version; a row is read in whichever it was written. */
export const StoredTurnInspectionShape = z.discriminatedUnion("version", [
  TurnInspectionV1Shape,
  TurnInspectionV2Shape,
]);

/** The R2 object of a version-2 record: the texts, in the record's order. */
export const InspectionTextShape = z.object({
  sections: z.array(z.string()),
  tools: z.array(z.object({ arguments: z.unknown(), output: z.string() })),
  memories: z.array(MemoryRefShape).optional(),
});
export type InspectionText = z.infer<typeof InspectionTextShape>;

type KeptTool = Omit<InspectedTool, "arguments" | "output"> & {
  arguments?: unknown;
  output?: string;
};

/** A record as read back: the texts are there when kept inline (v1) or joined from R2 (v2). */
export interface KeptInspection extends Omit<TurnInspection, "version" | "sections" | "tools"> {
  /** `included`: the texts are here (a version-1 row, or joined); `r2`: still to be read there. */
  text: "included" | TextPlace;
  /** The memories' references are in the R2 object (an outline past MAX_OUTLINE_BYTES). */
  memoriesInText: boolean;
  /** `chars`: the length of a version-2 section's text, to check the R2 text against. */
  sections: Array<{ name: string; tokens: number; chars?: number; text?: string }>;
  tools: KeptTool[];
}

/**
 * The compact record for D1 and the text for R2. Without R2 (`none`) the memories' references stay
 * in D1 whatever their size: they are the record's, and only the text may be left out.
 */
export function splitInspection(
  inspection: TurnInspection,
  text: TextPlace,
): { record: TurnInspectionV2; text: InspectionText } {
  const { version: _full, sections, memories, tools, ...ids } = inspection;
  const refs = memories.map((m): MemoryRef => [m.id, m.type, m.score, m.provider, m.matchedBy]);
  const record: TurnInspectionV2 = {
    version: 2,
    ...ids,
    text,
    sections: sections.map((s) => ({ name: s.name, tokens: s.tokens, chars: s.text.length })),
    memories: refs,
    tools: tools.map(({ arguments: args, output, ...call }) => ({
      ...call,
      argumentsChars: JSON.stringify(args ?? null).length,
      outputChars: output.length,
    })),
  };
  const texts: InspectionText = {
    sections: sections.map((s) => s.text),
    tools: tools.map((call) => ({ arguments: call.arguments, output: call.output })),
  };
  if (text === "r2" && utf8Bytes(JSON.stringify(record)) > MAX_OUTLINE_BYTES)
    return { record: { ...record, memories: "r2" }, text: { ...texts, memories: refs } };
  return { record, text: texts };
}

/** A stored row of any version as the route reads it, without the R2 text. */
export function keptOf(stored: z.infer<typeof StoredTurnInspectionShape>): KeptInspection {
  if (stored.version === 1) {
    const { version: _v1, ...rest } = stored;
    return { ...rest, text: "included", memoriesInText: false };
  }
  const { version: _v2, sections, memories, tools, ...rest } = stored;
  return {
    ...rest,
    sections,
    memoriesInText: memories === "r2",
    memories: memories === "r2" ? [] : memories.map(memoryOf),
    tools: tools.map(({ argumentsChars: _a, outputChars: _o, ...call }) => call),
  };
}

/**
 * The record with its R2 text. A text that does not fit its record (another count of sections or
 * tools, another length) is left out rather than shown against the wrong sections.
 */
export function joinText(kept: KeptInspection, text: InspectionText): KeptInspection {
  const fits =
    text.sections.length === kept.sections.length &&
    text.tools.length === kept.tools.length &&
    text.sections.every((section, i) => section.length === kept.sections[i]!.chars);
  if (!fits) return { ...kept, text: "none" };
  return {
    ...kept,
    text: "included",
    memories: text.memories && kept.memoriesInText ? text.memories.map(memoryOf) : kept.memories,
    sections: kept.sections.map((section, i) => ({ ...section, text: text.sections[i]! })),
    tools: kept.tools.map((call, i) => ({ ...call, ...text.tools[i]! })),
  };
}

function memoryOf([id, type, score, provider, matchedBy]: MemoryRef): InspectedMemory {
  return { id, type, score, provider, matchedBy };
}

function utf8Bytes(text: string): number {
  return new TextEncoder().encode(text).length;
}
