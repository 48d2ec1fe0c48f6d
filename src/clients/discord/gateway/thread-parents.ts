// Which channel each thread belongs to, so a thread takes its parent channel's agent, allow-list
// entry and settings. A message event does not say; the Guilds intent's events do: GUILD_CREATE
// lists a server's active threads, THREAD_CREATE / THREAD_UPDATE / THREAD_LIST_SYNC name threads
// with their parent_id, THREAD_DELETE and GUILD_DELETE end them; a thread the bot opens itself
// (autoThread) is noted at once, before Discord's THREAD_CREATE arrives. Kept in the shard
// object's storage (a RESUME does not send GUILD_CREATE again), at most MAX_THREADS, the oldest
// dropped first.
import { z } from "zod";

const Snowflake = z.string().regex(/^\d{1,20}$/);
const Thread = z.object({
  id: Snowflake,
  parent_id: Snowflake.nullish(),
  guild_id: Snowflake.optional(),
});
const ThreadList = z.object({
  guild_id: Snowflake.optional(),
  id: Snowflake.optional(),
  threads: z.array(z.unknown()).max(10_000).default([]),
});
const Deleted = z.object({ id: Snowflake });

export const MAX_THREADS = 10_000;
export const StoredThreadParents = z.record(z.string(), z.tuple([z.string(), z.string()]));

export class ThreadParents {
  /** thread id -> [parent channel id, guild id]. */
  private readonly byThread: Map<string, [string, string]>;

  constructor(stored: Record<string, [string, string]> = {}) {
    this.byThread = new Map(Object.entries(stored));
  }

  parentOf(channelId: string): string | null {
    return this.byThread.get(channelId)?.[0] ?? null;
  }

  toJSON(): Record<string, [string, string]> {
    return Object.fromEntries(this.byThread);
  }

  /** A thread the bot started itself (autoThread); true when the map changed (to be stored). */
  opened(threadId: string, parentId: string, guildId: string): boolean {
    return this.add({ id: threadId, parent_id: parentId }, guildId);
  }

  /** Reads a dispatch; true when the map changed (to be stored). */
  note(event: string, data: unknown): boolean {
    switch (event) {
      case "THREAD_CREATE":
      case "THREAD_UPDATE": {
        const thread = Thread.safeParse(data);
        return thread.success && this.add(thread.data, thread.data.guild_id);
      }
      case "GUILD_CREATE":
      case "THREAD_LIST_SYNC": {
        const list = ThreadList.safeParse(data);
        if (!list.success) return false;
        const guildId = list.data.guild_id ?? list.data.id;
        let changed = false;
        for (const item of list.data.threads) {
          const thread = Thread.safeParse(item);
          if (thread.success) changed = this.add(thread.data, guildId) || changed;
        }
        return changed;
      }
      case "THREAD_DELETE": {
        const deleted = Deleted.safeParse(data);
        return deleted.success && this.byThread.delete(deleted.data.id);
      }
      case "GUILD_DELETE": {
        const deleted = Deleted.safeParse(data);
        if (!deleted.success) return false;
        let changed = false;
        for (const [thread, [, guild]] of this.byThread)
          if (guild === deleted.data.id) changed = this.byThread.delete(thread) || changed;
        return changed;
      }
      default:
        return false;
    }
  }

  private add(thread: z.infer<typeof Thread>, guildId: string | undefined): boolean {
    if (!thread.parent_id || !guildId) return false;
    const known = this.byThread.get(thread.id);
    if (known?.[0] === thread.parent_id) return false;
    this.byThread.delete(thread.id);
    this.byThread.set(thread.id, [thread.parent_id, guildId]);
    if (this.byThread.size > MAX_THREADS) this.byThread.delete(this.byThread.keys().next().value!);
    return true;
  }
}
