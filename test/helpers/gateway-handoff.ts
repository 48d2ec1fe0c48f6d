// When the Gateway object is done with dispatched events: its stored watermark (the sequence number
// up to which every event was handed to its room, src/clients/discord/gateway/seq-watermark.ts)
// has reached them. Every turn those events start is then in its room's journal, so a test can
// wait for the journal to settle and count what happened (STYLE.md rule 18).
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { shardName } from "../../src/clients/discord/gateway/shard-plan.ts";
import { waitFor } from "./gateway.ts";

/** The watermark a shard's object stored (null before its first event of the session). */
export async function handedOverSeq(shard = shardName(0, 1)): Promise<number | null> {
  // A fresh stub each time: a stub of an aborted object stays broken.
  const mark = await runInDurableObject(env.GATEWAY!.getByName(shard), (_instance, state) =>
    state.storage.kv.get("seq"),
  );
  return typeof mark === "number" ? mark : null;
}

/** Waits until the events numbered `seqs` (what `dispatch` returned), and all before, were handed over. */
export async function handedOver(seqs: number[], shard = shardName(0, 1)): Promise<void> {
  const last = Math.max(...seqs);
  await waitFor(`events up to ${last} handed to their rooms`, async () => {
    const mark = await handedOverSeq(shard);
    return mark !== null && mark >= last;
  });
}
