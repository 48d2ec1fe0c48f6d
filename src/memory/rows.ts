// Converts between `Memory` values and `memories` rows. JSON columns are untrusted on the way back
// (a hand edit, an older version's shape), so they are parsed with zod; a bad row is reported with
// its id rather than crashing a whole listing with an opaque error.
import { z } from "zod";
import { InternalError } from "../runtime/errors.ts";
import type { Memory, MemoryType } from "../runtime/types.ts";
import type { memories } from "./schema.ts";

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
  const content = MemoryContentRow.safeParse(safeJson(row.content));
  const metadata = MetadataRow.safeParse(safeJson(row.metadata));
  if (!content.success || !metadata.success) {
    throw new InternalError(`memory ${row.id} has a malformed content or metadata column`);
  }
  return {
    id: row.id,
    type: row.type as MemoryType,
    agentId: row.agentId,
    roomId: row.roomId,
    userId: row.userId,
    parentId: row.parentId,
    content: content.data,
    metadata: metadata.data,
    createdAt: row.createdAt,
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
