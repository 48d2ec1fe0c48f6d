// An eviction while one Discord turn runs and another waits in the room's journal: after the
// restart both are answered, once each, in arrival order. (Through Discord because its requests
// return once journalled: a REST caller still waiting on an aborted object is a harness limit,
// its RPC never settles in vitest's single isolate.)
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { chat, post, snowflake, useAgentIn, useDiscordStandIns } from "../../helpers/discord.ts";
import { lastUserText } from "../../helpers/model-messages.ts";
import { settledJournal } from "../../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();

async function journal(name: string): Promise<string[]> {
  return runInDurableObject(env.ROOMS.getByName(name), (_instance, state) =>
    state.storage.sql
      .exec<{ status: string }>("SELECT status FROM turn_journal ORDER BY seq")
      .toArray()
      .map((row) => row.status),
  );
}

async function roomState(name: string): Promise<DurableObjectState> {
  let captured: DurableObjectState | undefined;
  await runInDurableObject(env.ROOMS.getByName(name), (_instance, state) => {
    captured = state;
  });
  return captured!;
}

describe("fault injection on Discord", () => {
  it("an eviction with one turn running and one queued: both answered once, in arrival order", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const room = `${agentId}:discord:${channel}`;
    const state = await roomState(room);
    let secondQueued!: () => void;
    const queued = new Promise<void>((resolve) => (secondQueued = resolve));
    let crashed = false;
    let aborted = false;
    model.respondWith(async (call) => {
      if (call.model !== "test-primary") return { text: "{}" };
      if (!crashed) {
        crashed = true;
        // The first turn is in its model call; once the second is journalled, the object dies.
        await queued;
        aborted = true;
        state.abort("simulated eviction with a queued turn");
        return { hang: true };
      }
      return { text: `re: ${lastUserText(call)}` };
    });
    expect((await post(chat(channel, "turn-1"))).status).toBe(200);
    await vi.waitFor(() => expect(crashed).toBe(true));
    expect((await post(chat(channel, "turn-2"))).status).toBe(200);
    secondQueued();
    await vi.waitFor(() => expect(aborted).toBe(true));
    // Any contact restarts the object (here: reading its journal); it resumes the cut-off turn,
    // then the waiting one. (In production the pending queue item's alarm is that contact.)
    await journal(room);

    // Both turns evaluated and their replies delivered: then the stand-in's record is final.
    const turns = await settledJournal(room, 2);
    expect(turns.map((turn) => [turn.status, turn.deliveryStatus])).toEqual([
      ["evaluated", "delivered"],
      ["evaluated", "delivered"],
    ]);
    expect(discord.calls.map((call) => call.body.content)).toEqual(["re: turn-1", "re: turn-2"]);
    const stored = await env.DB.prepare(
      "SELECT content FROM memories WHERE agent_id = ? AND type = 'message' ORDER BY created_at, rowid",
    )
      .bind(agentId)
      .all<{ content: string }>();
    expect(stored.results.map((row) => (JSON.parse(row.content) as { text: string }).text)).toEqual(
      ["turn-1", "re: turn-1", "turn-2", "re: turn-2"],
    );
  });
});
