// What a person reads the first time they write to an agent in a direct message it does not take
// (its DM policy: owners only, the default, or off). Silence left them wondering whether the bot
// worked; one sentence says it does, and where to ask. Only the first time per agent and person
// (src/db/stores/dm-notice-store.ts): someone who keeps writing is not answered each time. Best
// effort: a notice that cannot be sent is logged and tried again with their next DM.
import { stores } from "../../db/stores/index.ts";
import type { Env } from "../../env.ts";
import { errorField, log } from "../../log.ts";

export const DM_CLOSED_TEXT =
  "I don't take direct messages from you. Ask me in a channel or group I'm in.";

/** Sends DM_CLOSED_TEXT in the refused DM's chat (the adapter's own client). */
export type TellDmClosed = (text: string) => Promise<unknown>;

export async function tellDmClosedOnce(
  env: Env,
  notice: { agentId: string; userId: string; at: number },
  tell: TellDmClosed,
): Promise<void> {
  const store = stores(env).dmNotices;
  const { agentId, userId } = notice;
  try {
    if (!(await store.claim(notice))) return;
    try {
      await tell(DM_CLOSED_TEXT);
    } catch (error) {
      await store.release(notice);
      throw error;
    }
    log.info("dm_closed_told", { agentId, userId });
  } catch (error) {
    log.warn("dm_notice_failed", { agentId, userId, error: errorField(error) });
  }
}
