// Converts between `Memory` values and `memories` rows. JSON columns are untrusted on the way back
// (a hand edit, an older version's shape), so they are parsed with zod; a bad row is reported with
// its id rather than crashing a whole listing with an opaque error.
import { z } from "zod";
import { InternalError } from "../../runtime/util/errors.ts";
import type { Memory, MemoryType } from "../../runtime/ports/memory.ts";
import type { memories } from "../schema.ts";

const AttachmentRow = z.object({
  url: z.string(),
  contentType: z.string().optional(),
  title: z.string().optional(),
});

export const MemoryContentRow = z.looseObject({
  text: z.string(),
  role: z.enum(["user", "agent"]).optional(),
  source: z.string().optional(),
  userName: z.string().optional(),
  actions: z.array(z.string()).optional(),
  attachments: z.array(AttachmentRow).optional(),
  inReplyTo: z.string().optional(),
});

const MetadataRow = z.record(z.string(), z.unknown());

/** A memory row binds at most 11 parameters: 8 rows stay under D1's 100 per statement. */
export const MEMORY_ROWS_PER_INSERT = 8;

type MemoryRow = typeof memories.$inferSelect;
type MemoryInsert = typeof memories.$inferInsert;

export function toMemoryRow(memory: Memory): MemoryInsert {
  return {
    id: memory.id,
    type: memory.type,
    agentId: memory.agentId,
    roomId: memory.roomId,
    userId: memory.userId,
    parentId: memory.parentId ?? null,
    content: JSON.stringify(memory.content),
    metadata: JSON.stringify(memory.metadata),
    createdAt: memory.createdAt,
  };
}

export function fromMemoryRow(row: MemoryRow): Memory {
  const content = parseContent(safeJson(row.content));
  const metadata = parseMetadata(safeJson(row.metadata));
  if (content === null || metadata === null) {
    throw new InternalError(`memory ${row.id} has a malformed content or metadata column`);
  }
  return {
    id: row.id,
    type: row.type as MemoryType,
    agentId: row.agentId,
    roomId: row.roomId,
    userId: row.userId,
    parentId: row.parentId,
    content,
    metadata,
    createdAt: row.createdAt,
  };
}

type Content = Memory["content"];

/**
 * MemoryContentRow's answer, without zod for the common shape: a turn reads dozens of rows, and
 * zod's parse was most of the time spent turning them into memories. Content with attachments (whose
 * unknown keys zod strips) and anything the quick check does not accept go through zod itself, so
 * both always agree (test/db/memory/rows.test.ts compares them).
 */
export function parseContent(value: unknown): Content | null {
  if (isPlainObject(value) && value.attachments === undefined) {
    const v = value as Record<string, unknown>;
    if (
      typeof v.text === "string" &&
      (v.role === undefined || v.role === "user" || v.role === "agent") &&
      optionalString(v.source) &&
      optionalString(v.userName) &&
      optionalString(v.inReplyTo) &&
      (v.actions === undefined ||
        (Array.isArray(v.actions) && v.actions.every((a) => typeof a === "string")))
    ) {
      return value as unknown as Content;
    }
  }
  const parsed = MemoryContentRow.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** MetadataRow's answer, without zod for a plain JSON object (what JSON.parse gives back). */
export function parseMetadata(value: unknown): Record<string, unknown> | null {
  if (isPlainObject(value) && !Object.hasOwn(value, "__proto__")) return value;
  const parsed = MetadataRow.safeParse(value);
  return parsed.success ? parsed.data : null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
