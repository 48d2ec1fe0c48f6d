// Reading a room's conversation for the API: newest first, paged with a `before` cursor that is
// the createdAt of the oldest message already seen.
import { and, desc, eq, lt, sql } from "drizzle-orm";
import type { Memory } from "../runtime/types.ts";
import type { Db } from "./d1-memory-store.ts";
import { fromMemoryRow } from "./rows.ts";
import { memories } from "./schema.ts";

export interface HistoryQuery {
  agentId: string;
  roomId: string;
  limit: number;
  before?: number;
}

export interface HistoryPage {
  messages: Memory[];
  nextBefore: number | null;
}

export interface MessageHistory {
  page(query: HistoryQuery): Promise<HistoryPage>;
}

export function createMessageHistory(db: Db): MessageHistory {
  return {
    async page({ agentId, roomId, limit, before }) {
      const conditions = [eq(memories.agentId, agentId), eq(memories.roomId, roomId), eq(memories.type, "message")];
      if (before !== undefined) conditions.push(lt(memories.createdAt, before));
      const rows = await db
        .select()
        .from(memories)
        .where(and(...conditions))
        .orderBy(desc(memories.createdAt), desc(sql`${memories}.rowid`))
        .limit(limit + 1);
      const page = rows.slice(0, limit).map(fromMemoryRow);
      return { messages: page, nextBefore: rows.length > limit ? (page.at(-1)?.createdAt ?? null) : null };
    },
  };
}
