// When a new shard is ready to take over a re-shard's servers. Discord's READY lists the shard's
// servers as unavailable and sends each one's GUILD_CREATE afterwards (a large shard's over some
// seconds); until a server's GUILD_CREATE the session gets none of its messages, so the old shard
// must keep them until then. Ready: READY with every listed server arrived, or RESUMED (the
// session had them), or GUILDS_ARRIVAL_WAIT_MS after READY (a server in an outage may stay
// unavailable for long). Pure: tested in Node (test/node/gateway-shards.spec.ts).
import { z } from "zod";

/** How long after READY a shard waits for its servers before it calls itself ready anyway. */
export const GUILDS_ARRIVAL_WAIT_MS = 15_000;

const Ready = z.object({
  guilds: z.array(z.object({ id: z.string() })).catch([]),
});
const GuildCreate = z.object({ id: z.string() });

export class GuildArrival {
  /** Servers READY listed whose GUILD_CREATE has not come; null when not waiting. */
  private pending: Set<string> | null = null;

  /** Whether the shard is waiting for servers after READY. */
  get waiting(): boolean {
    return this.pending !== null;
  }

  /** Notes a dispatched event; true when the shard has just become ready to take over. */
  note(event: string, data: unknown): boolean {
    if (event === "READY") {
      const ready = Ready.safeParse(data);
      const ids = ready.success ? ready.data.guilds.map((guild) => guild.id) : [];
      this.pending = ids.length > 0 ? new Set(ids) : null;
      return this.pending === null;
    }
    if (event === "RESUMED") {
      this.pending = null;
      return true;
    }
    if (event === "GUILD_CREATE" && this.pending) {
      const guild = GuildCreate.safeParse(data);
      if (guild.success) this.pending.delete(guild.data.id);
      if (this.pending.size === 0) {
        this.pending = null;
        return true;
      }
    }
    return false;
  }

  /** The wait after READY is over: true when it was still waiting (the shard is ready anyway). */
  expire(): boolean {
    const was = this.pending !== null;
    this.pending = null;
    return was;
  }
}
