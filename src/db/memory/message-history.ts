// Reading a room's conversation for the API: newest first, paged with a `before` cursor that is
// the createdAt of the oldest message already seen.
import type { Memory } from "../../runtime/ports/memory.ts";
import type { Db } from "../db.ts";
import { selectRoomMessages } from "./d1-memory-store.ts";

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
      // One extra row tells whether another page follows.
      const rows = await selectRoomMessages(db, {
        agentId,
        roomId,
        limit: limit + 1,
        beforeMs: before,
      });
      const page = rows.slice(0, limit);
      return {
        messages: page,
        nextBefore: rows.length > limit ? (page.at(-1)?.createdAt ?? null) : null,
      };
    },
  };
}
