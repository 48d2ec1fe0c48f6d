// Tool approval through Discord end to end: a character marks `remember` as needing approval; the
// turn pauses and posts Approve / Deny buttons; only the requester's click counts; approval runs
// the tool and the reply follows on the click's token; denial and the 10-minute expiry tell the
// model it was not allowed; the pending state lives in the room's storage.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { AgentRoom } from "../../../src/durable-objects.ts";
import { api, json } from "../../helpers/api.ts";
import {
  APP_ID,
  chat,
  click,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../../helpers/discord.ts";
import { discordRoom, settledJournal } from "../../helpers/room-journal.ts";
import type { DiscordCall } from "../../stand-ins/discord-stand-in.ts";

const { model, discord } = useDiscordStandIns();

const FACT = "Dana's bees are called the Roof Committee";

interface Prompt {
  call: DiscordCall;
  approve: string;
  deny: string;
}

/** Starts a /chat whose model calls `remember`, and waits for the approval prompt. */
async function pausedTurn(): Promise<{
  channel: string;
  user: string;
  agentId: string;
  prompt: Prompt;
}> {
  const channel = snowflake();
  const user = snowflake();
  const agentId = await useAgentIn(channel, { toolApproval: ["remember"] });
  model.script({ toolCalls: [{ name: "remember", arguments: { fact: FACT } }] });
  const ack = await post(chat(channel, "please remember my bees' name", { user }));
  expect(await ack.json()).toEqual({ type: 5 });
  const [call] = await discord.waitForCalls(1);
  const buttons = (
    call!.body.components as { components: { label: string; custom_id: string }[] }[]
  )[0]!.components;
  return {
    channel,
    user,
    agentId,
    prompt: {
      call: call!,
      approve: buttons.find((b) => b.label === "Approve")!.custom_id,
      deny: buttons.find((b) => b.label === "Deny")!.custom_id,
    },
  };
}

async function facts(agentId: string, user: string): Promise<string[]> {
  const listed = await json<{ memories: { type: string; text: string }[] }>(
    await api("GET", `/memories?agentId=${agentId}&userId=discord:${user}`),
  );
  return listed.memories.filter((memory) => memory.type === "fact").map((memory) => memory.text);
}

/** The tool message the model was given on its second call. */
function toolResultSeen(): string {
  const messages = model.calls[1]!.body.messages as { role: string; content: string }[];
  return messages.filter((message) => message.role === "tool").at(-1)!.content;
}

describe("Discord tool approval", () => {
  it("pauses at the tool, ignores other people's clicks, and runs it once when the requester approves", async () => {
    const { channel, user, agentId, prompt } = await pausedTurn();
    expect(prompt.call.method).toBe("PATCH");
    expect(prompt.call.path).toMatch(/\/messages\/@original$/);
    expect(String(prompt.call.body.content)).toContain("wants to run `remember`");
    expect(String(prompt.call.body.content)).toContain(FACT);
    expect(String(prompt.call.body.content)).toContain(`<@${user}>`);
    expect(prompt.call.body.allowed_mentions).toEqual({ parse: [] });
    expect(await facts(agentId, user)).toEqual([]);
    expect(model.calls).toHaveLength(1);

    const intruder = await json<{ type: number; data: { content: string; flags: number } }>(
      await post(click(channel, snowflake(), prompt.approve)),
    );
    expect(intruder).toMatchObject({
      type: 4,
      data: { flags: 64, content: expect.stringContaining("Only the person who asked") },
    });

    model.script({ text: "Saved: the Roof Committee." });
    const clickToken = `tok-${snowflake()}`;
    const answered = await json<{ type: number; data: { content: string; components: unknown[] } }>(
      await post(click(channel, user, prompt.approve, clickToken)),
    );
    expect(answered.type).toBe(7);
    expect(answered.data.components).toEqual([]);
    expect(answered.data.content).toMatch(/approved: running `remember`/);

    // The reply follows the prompt as a follow-up on the click's fresh token.
    const calls = await discord.waitForCalls(2);
    expect(calls[1]).toMatchObject({
      method: "POST",
      path: `/api/v10/webhooks/${APP_ID}/${clickToken}`,
      body: { content: "Saved: the Roof Committee." },
    });
    expect(toolResultSeen()).not.toMatch(/^Error/);
    await vi.waitFor(async () => expect(await facts(agentId, user)).toEqual([FACT]));

    // A second click (or a late one) changes nothing.
    const again = await json<{ type: number; data: { content: string } }>(
      await post(click(channel, user, prompt.approve)),
    );
    expect(again.data.content).toContain("no longer waiting");
    // The click was answered, so anything it set off is in the journal: once that is all done,
    // the turn ran its tool once, asked the model twice and sent the prompt and one reply.
    const turns = await settledJournal(discordRoom(agentId, channel));
    expect(turns.map((turn) => [turn.status, turn.deliveryStatus])).toEqual([
      ["evaluated", "delivered"],
    ]);
    expect(await facts(agentId, user)).toEqual([FACT]);
    expect(model.calls).toHaveLength(2);
    expect(discord.calls).toHaveLength(2);
  });

  it("tells the model a denial and does not run the tool", async () => {
    const { channel, user, agentId, prompt } = await pausedTurn();
    model.script({ text: "Okay, I won't save it." });
    const answered = await json<{ type: number; data: { content: string } }>(
      await post(click(channel, user, prompt.deny)),
    );
    expect(answered).toMatchObject({
      type: 7,
      data: { content: expect.stringContaining("denied `remember`") },
    });
    const calls = await discord.waitForCalls(2);
    expect(calls[1]!.body.content).toBe("Okay, I won't save it.");
    expect(toolResultSeen()).toMatch(/^Error: the user denied permission to run remember/);
    expect(await facts(agentId, user)).toEqual([]);
  });

  it("expires after 10 minutes without an answer: the prompt says so and the model is told", async () => {
    const { channel, user, agentId, prompt } = await pausedTurn();
    const stub = env.ROOMS.getByName(`${agentId}:discord:${channel}`);
    const schedule = await runInDurableObject(stub, (instance: AgentRoom) =>
      instance
        .getSchedules<{ turnId: string; approvalId: string }>()
        .find((s) => s.callback === "expireApproval"),
    );
    expect(schedule).toBeDefined();
    expect(schedule!.time * 1000 - Date.now()).toBeGreaterThan(9 * 60 * 1000);
    expect(schedule!.time * 1000 - Date.now()).toBeLessThanOrEqual(10 * 60 * 1000);

    model.script({ text: "I needed your approval for that." });
    // What the scheduler does when the time comes.
    await runInDurableObject(stub, (instance: AgentRoom) =>
      instance.expireApproval(schedule!.payload),
    );
    const calls = await discord.waitForCalls(3);
    const edit = calls.find(
      (c) => c.method === "PATCH" && c.path === prompt.call.path && c !== calls[0],
    );
    expect(edit?.body).toMatchObject({
      content: expect.stringContaining("Nobody answered within 10 minutes"),
      components: [],
    });
    const reply = calls.find((c) => c.method === "POST");
    expect(reply?.body.content).toBe("I needed your approval for that.");
    expect(toolResultSeen()).toMatch(/nobody approved remember within the time allowed/);
    expect(await facts(agentId, user)).toEqual([]);

    const late = await json<{ data: { content: string } }>(
      await post(click(channel, user, prompt.approve)),
    );
    expect(late.data.content).toContain("no longer waiting");
  });

  it("keeps everything the pending approval needs in the room's storage, and re-arms its expiry once on a restart", async () => {
    const { channel, user, agentId, prompt } = await pausedTurn();
    const stub = env.ROOMS.getByName(`${agentId}:discord:${channel}`);
    // What an evicted room comes back to: the journal row in its SQLite, nothing from memory.
    const row = await runInDurableObject(stub, (_instance: AgentRoom, state) =>
      state.storage.sql
        .exec("SELECT status, pause, delivery FROM turn_journal ORDER BY seq DESC LIMIT 1")
        .one(),
    );
    expect(row.status).toBe("awaiting_approval");
    const pause = JSON.parse(String(row.pause)) as {
      approvalId: string;
      tool: string;
      requesterId: string;
      prompt: { messageId: string };
      checkpoint: { pendingCalls: { name: string }[] };
    };
    expect(pause).toMatchObject({
      tool: "remember",
      requesterId: `discord:${user}`,
      prompt: { messageId: "@original" },
    });
    expect(pause.checkpoint.pendingCalls.map((call) => call.name)).toEqual(["remember"]);
    expect(prompt.approve).toContain(pause.approvalId);
    expect(JSON.parse(String(row.delivery))).toMatchObject({ originalUsed: true });

    // A restart runs onStart again: the expiry is re-armed idempotently, never doubled. The
    // restart (the SDK wraps onStart in an async start-up) and every schedule it asked for are
    // awaited, so the count read after is the final one.
    const rearmed = await runInDurableObject(stub, async (instance: AgentRoom) => {
      const schedule = vi.spyOn(instance, "schedule");
      try {
        await Promise.resolve(instance.onStart());
        await Promise.allSettled(schedule.mock.results.map((result) => result.value));
        return {
          asked: schedule.mock.calls.filter((call) => call[1] === "expireApproval").length,
          armed: instance.getSchedules().filter((s) => s.callback === "expireApproval").length,
        };
      } finally {
        schedule.mockRestore();
      }
    });
    expect(rearmed).toEqual({ asked: 1, armed: 1 });

    model.script({ text: "Saved." });
    expect(
      (await json<{ type: number }>(await post(click(channel, user, prompt.approve)))).type,
    ).toBe(7);
    await discord.waitForCalls(2);
    await vi.waitFor(async () => expect(await facts(agentId, user)).toEqual([FACT]));
  });

  it("answers a forged or unknown approval button without touching any turn", async () => {
    const channel = snowflake();
    const unknown = await json<{ type: number; data: { content: string } }>(
      await post(click(channel, snowflake(), "ap:y:0123456789abcdef:no-such-agent")),
    );
    expect(unknown).toMatchObject({
      type: 4,
      data: { content: expect.stringContaining("no longer waiting") },
    });
    const malformed = await json<{ data: { content: string } }>(
      await post(click(channel, snowflake(), "ap:y:nothex:agent")),
    );
    expect(malformed.data.content).toContain("no longer valid");
  });
});
