// Who was told that an agent does not take their direct messages (src/clients/chat/dm-notice.ts):
// the first refused DM claims the row and gets the sentence; later ones find it and get silence.
// A notice that could not be sent gives the claim back, so the next DM tries again. The row holds
// no words, only who and when; it goes with the agent.
import { and, eq } from "drizzle-orm";
import type { Db } from "../db.ts";
import { dmNotices } from "../schema.ts";

export interface DmNoticeStore {
  /** True for the first claim of (agent, person): they are to be told now. */
  claim(notice: { agentId: string; userId: string; at: number }): Promise<boolean>;
  release(notice: { agentId: string; userId: string }): Promise<void>;
}

export function createDmNoticeStore(db: Db): DmNoticeStore {
  return {
    async claim({ agentId, userId, at }) {
      const inserted = await db
        .insert(dmNotices)
        .values({ agentId, userId, toldAt: at })
        .onConflictDoNothing()
        .returning({ agentId: dmNotices.agentId });
      return inserted.length > 0;
    },
    async release({ agentId, userId }) {
      await db
        .delete(dmNotices)
        .where(and(eq(dmNotices.agentId, agentId), eq(dmNotices.userId, userId)));
    },
  };
}
