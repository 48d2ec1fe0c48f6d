// The Discord bot end to end through the worker: real Ed25519 signatures (a key pair generated
// for the run, see vitest.config.ts), the deferred flow with the model stand-in held open, the
// follow-up edits and messages at Discord's REST stand-in, splitting, exactly-once delivery,
// 429s, the other commands, and the per-client settings.
import { UNAVAILABLE_TEXT } from "../../../src/clients/chat/member-error.ts";
import { describe, expect, it } from "vitest";
import { COMMANDS } from "../../../src/clients/discord/commands.ts";
import { diffCommands } from "../../../src/clients/discord/register.ts";
import { splitMessage } from "../../../src/clients/chat/split.ts";
import { api, createTestAgent, json } from "../../helpers/api.ts";
import {
  APP_ID,
  chat,
  command,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../../helpers/discord.ts";
import { discordRoom, settledJournal } from "../../helpers/room-journal.ts";

const { model, discord } = useDiscordStandIns();

describe("Discord webhook: signature and payload checks", () => {
  it("answers a signed PING with PONG", async () => {
    const response = await post(
      JSON.stringify({ id: snowflake(), application_id: APP_ID, type: 1 }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ type: 1 });
  });

  it("refuses a tampered body, a wrong or missing signature, and an old timestamp with 401", async () => {
    const ping = JSON.stringify({ id: snowflake(), application_id: APP_ID, type: 1 });
    const tampered = await post(ping, { tamper: (s) => s.replace('"type":1', '"type":1 ') });
    const wrong = await post(ping, { signature: "ab".repeat(64) });
    const missing = await post(ping, { signature: null });
    const old = String(Math.floor(Date.now() / 1000) - 6 * 60);
    const replay = await post(ping, { timestamp: old });
    for (const response of [tampered, wrong, missing, replay]) {
      expect(response.status).toBe(401);
      expect((await json<{ error: { code: string } }>(response)).error.code).toBe("unauthorized");
    }
  });

  it("refuses a signed but malformed interaction with 400 naming the field", async () => {
    const response = await post(
      JSON.stringify({
        id: "not-a-snowflake",
        application_id: APP_ID,
        type: 2,
        token: "t",
        data: { name: "chat" },
      }),
    );
    expect(response.status).toBe(400);
    expect((await json<{ error: { message: string } }>(response)).error.message).toContain("id");
    const notJson = await post("{nope");
    expect(notJson.status).toBe(400);
  });
});

describe("Discord /chat: deferred reply", () => {
  it("acknowledges with type 5 while the model is still working, then edits the response with the reply", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    model.script({ hang: true });
    const response = await post(chat(channel, "What's the capital of Portugal? @everyone"));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ type: 5 });
    await model.waitForHang();
    expect(discord.calls).toHaveLength(0);
    model.releaseHung({ text: "Lisbon, @everyone!" });
    const [edit] = await discord.waitForCalls(1);
    expect(edit!.method).toBe("PATCH");
    expect(edit!.path).toMatch(
      new RegExp(`^/api/v10/webhooks/${APP_ID}/tok-\\d+/messages/@original$`),
    );
    expect(edit!.body).toEqual({ content: "Lisbon, @everyone!", allowed_mentions: { parse: [] } });
    const history = await json<{ messages: { text: string; userId: string | null }[] }>(
      await api("GET", `/agents/${agentId}/rooms/discord:${channel}/messages`),
    );
    expect(history.messages.map((m) => m.text)).toEqual(
      expect.arrayContaining(["What's the capital of Portugal? @everyone", "Lisbon, @everyone!"]),
    );
  });

  it("splits a long reply into an edit and follow-ups of at most 2,000 characters, never inside a code block", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const prose = "This sentence is filler for the test. ".repeat(60);
    const code = `\`\`\`ts\n${Array.from({ length: 80 }, (_, i) => `const value${i} = ${i} * 2; // line ${i}`).join("\n")}\n\`\`\``;
    model.script({ text: `${prose}\n\n${code}\n\nThat's all.` });
    await post(chat(channel, "explain"));
    // The journal says the whole reply went out, and how many messages it took: all of them are here.
    const [turn] = await settledJournal(discordRoom(agentId, channel));
    expect(turn).toMatchObject({ status: "evaluated", deliveryStatus: "delivered" });
    const calls = discord.calls;
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(calls).toHaveLength(turn!.deliveredParts);
    expect(calls[0]!.method).toBe("PATCH");
    expect(
      calls
        .slice(1)
        .every(
          (c) =>
            c.method === "POST" && c.path === calls[0]!.path.replace("/messages/@original", ""),
        ),
    ).toBe(true);
    const contents = calls.map((c) => String(c.body.content));
    for (const content of contents) {
      expect(content.length).toBeLessThanOrEqual(2_000);
      expect((content.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(contents.join("\n")).toContain("const value79 = 79 * 2;");
    expect(contents.at(-1)).toContain("That's all.");
  });

  it("runs one turn and sends one reply when Discord delivers the same interaction twice", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    model.script({ text: "once" });
    const id = snowflake();
    const body = chat(channel, "hello", { id });
    const [first, second] = await Promise.all([post(body), post(body)]);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    // Both deliveries were answered, so every turn they started is in the journal: wait for all of
    // them to be done, then there is one turn for the interaction and one reply.
    const turns = await settledJournal(discordRoom(agentId, channel));
    expect(turns).toEqual([
      {
        idempotencyKey: `discord:${id}`,
        status: "evaluated",
        deliveryStatus: "delivered",
        deliveredParts: 1,
      },
    ]);
    expect(discord.calls.map((call) => call.body.content)).toEqual(["once"]);
    expect(model.calls.filter((c) => c.model === "test-primary")).toHaveLength(1);
  });

  it("waits out a Discord 429 (retry_after) and a 502, then delivers", async () => {
    const channel = snowflake();
    await useAgentIn(channel);
    discord.failNext(
      {
        status: 429,
        body: { message: "You are being rate limited.", retry_after: 0.05, global: false },
      },
      { status: 502 },
    );
    model.script({ text: "delivered anyway" });
    await post(chat(channel, "hi"));
    const [edit] = await discord.waitForCalls(1);
    expect(edit!.body.content).toBe("delivered anyway");
    expect(discord.attempts).toHaveLength(3);
  });

  it("tells the member when the turn fails, in neutral words, instead of staying silent", async () => {
    const channel = snowflake();
    await useAgentIn(channel);
    model.script({ status: 400, body: { error: { message: "bad request from the model API" } } });
    await post(chat(channel, "hi"));
    const [edit] = await discord.waitForCalls(1);
    // The model's failure is the operator's to read (logs, traces, the inspector), not the member's.
    expect(edit!.body.content).toBe(UNAVAILABLE_TEXT);
  });
});

describe("Discord commands", () => {
  it("lets a manager pick the agent with autocomplete, and refuses members without Manage Server", async () => {
    const channel = snowflake();
    const agentId = await createTestAgent();
    const suggest = await post(
      command("agent", {
        type: 4,
        channel,
        options: [{ name: "name", type: 3, value: agentId.slice(0, 12), focused: true }],
      }),
    );
    const choices = (await json<{ type: number; data: { choices: { value: string }[] } }>(suggest))
      .data.choices;
    expect(choices.map((c) => c.value)).toContain(agentId);
    const refused = await post(
      command("agent", {
        channel,
        permissions: "0",
        options: [{ name: "name", type: 3, value: agentId }],
      }),
    );
    expect((await json<{ data: { content: string; flags: number } }>(refused)).data).toMatchObject({
      flags: 64,
      content: expect.stringContaining("managers"),
    });
    const unknown = await post(
      command("agent", { channel, options: [{ name: "name", type: 3, value: "no-such-agent" }] }),
    );
    expect((await json<{ data: { content: string } }>(unknown)).data.content).toContain(
      "no agent called",
    );
  });

  it("says so when no agent serves the channel", async () => {
    const response = await post(chat(snowflake(), "anyone?"));
    expect(
      (await json<{ type: number; data: { content: string } }>(response)).data.content,
    ).toContain("No agent serves this channel");
  });

  it("remembers a fact, recalls it privately, and forgets it only after the owner confirms", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const user = snowflake();
    const remembered = await post(
      command("remember", {
        channel,
        user,
        options: [{ name: "fact", type: 3, value: "I keep bees on my roof" }],
      }),
    );
    expect(
      (await json<{ data: { content: string; flags: number } }>(remembered)).data,
    ).toMatchObject({ flags: 64 });
    const recalled = await json<{ data: { content: string } }>(
      await post(command("recall", { channel, user })),
    );
    expect(recalled.data.content).toContain("I keep bees on my roof");
    const searched = await json<{ data: { content: string } }>(
      await post(
        command("recall", { channel, user, options: [{ name: "query", type: 3, value: "bees" }] }),
      ),
    );
    expect(searched.data.content).toContain("I keep bees on my roof");
    const other = await json<{ data: { content: string } }>(
      await post(command("recall", { channel, user: snowflake() })),
    );
    expect(other.data.content).toContain("don't remember anything");

    const asked = await json<{ data: { components: { components: { custom_id: string }[] }[] } }>(
      await post(command("forget", { channel, user })),
    );
    const yes = asked.data.components[0]!.components[0]!.custom_id;
    const click = (clicker: string) =>
      JSON.stringify({
        id: snowflake(),
        application_id: APP_ID,
        type: 3,
        token: "tok",
        channel_id: channel,
        member: { user: { id: clicker, username: "x" }, permissions: "0" },
        data: { custom_id: yes, component_type: 2 },
      });
    const intruder = await json<{ type: number; data: { content: string } }>(
      await post(click(snowflake())),
    );
    expect(intruder).toMatchObject({
      type: 4,
      data: { content: expect.stringContaining("Only the person who asked") },
    });
    const listed = await json<{ memories: unknown[] }>(
      await api("GET", `/memories?agentId=${agentId}&userId=discord:${user}`),
    );
    expect(listed.memories).toHaveLength(1);
    const done = await json<{ type: number; data: { content: string } }>(await post(click(user)));
    expect(done).toMatchObject({
      type: 7,
      data: { content: expect.stringContaining("forgot 1 memory") },
    });
    const after = await json<{ memories: unknown[] }>(
      await api("GET", `/memories?agentId=${agentId}&userId=discord:${user}`),
    );
    expect(after.memories).toHaveLength(0);
  });

  it("lists the agent's tools", async () => {
    const channel = snowflake();
    await useAgentIn(channel);
    const tools = await json<{ data: { content: string } }>(
      await post(command("tools", { channel })),
    );
    expect(tools.data.content).toContain("`remember`");
  });
});

describe("Discord client settings", () => {
  it("sets a default agent and an allow-list, and refuses unknown agents and missing tokens", async () => {
    const agentId = await createTestAgent();
    const allowed = snowflake();
    expect(
      (await api("POST", "/clients/discord/config", { body: { defaultAgentId: "nobody-here" } }))
        .status,
    ).toBe(404);
    expect(
      (
        await api("POST", "/clients/discord/config", {
          body: { defaultAgentId: agentId, extra: 1 },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await api("POST", "/clients/discord/config", {
          token: null,
          body: { defaultAgentId: agentId },
        })
      ).status,
    ).toBe(401);
    const saved = await api("POST", "/clients/discord/config", {
      body: { defaultAgentId: agentId, allowedChannels: [allowed] },
    });
    expect(saved.status).toBe(200);
    expect(await json(await api("GET", "/clients/discord/config"))).toEqual({
      defaultAgentId: agentId,
      allowedChannels: [allowed],
      guilds: {},
      channels: {},
    });

    const elsewhere = await json<{ data: { content: string } }>(
      await post(chat(snowflake(), "hi")),
    );
    expect(elsewhere.data.content).toContain("not enabled in this channel");
    model.script({ text: "from the default agent" });
    expect(await json(await post(chat(allowed, "hi")))).toEqual({ type: 5 });
    const [edit] = await discord.waitForCalls(1);
    expect(edit!.body.content).toBe("from the default agent");
    await api("POST", "/clients/discord/config", { body: {} });
  });
});

describe("reply splitting", () => {
  it("returns short text as is and keeps every piece within the limit", () => {
    expect(splitMessage("  hello  ")).toEqual(["hello"]);
    expect(splitMessage("")).toEqual([]);
    const long = Array.from({ length: 50 }, (_, i) => `Paragraph ${i}. ${"word ".repeat(40)}`).join(
      "\n\n",
    );
    const parts = splitMessage(long);
    expect(parts.every((p) => p.length <= 2_000)).toBe(true);
    expect(parts.join("\n\n").replace(/\s+/g, " ")).toBe(long.replace(/\s+/g, " ").trim());
  });

  it("re-opens a long code block with its language in every piece, and closes an unclosed one", () => {
    const code = `\`\`\`python\n${Array.from({ length: 300 }, (_, i) => `print(${i})`).join("\n")}\n\`\`\``;
    const parts = splitMessage(code, 500);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.startsWith("```python\n")).toBe(true);
      expect(part.endsWith("\n```")).toBe(true);
      expect(part.length).toBeLessThanOrEqual(500);
    }
    expect(
      splitMessage("```js\nlet a = 1;".padEnd(3_000, " x"), 2_000).every(
        (p) => (p.match(/```/g) ?? []).length % 2 === 0,
      ),
    ).toBe(true);
    const word = "x".repeat(4_500);
    expect(splitMessage(word).map((p) => p.length)).toEqual([2_000, 2_000, 500]);
  });
});

describe("command registration diff", () => {
  it("reports added, updated, removed and unchanged commands, ignoring Discord's own fields", () => {
    const registered = [
      { ...COMMANDS[0], id: "1", version: "9", application_id: APP_ID },
      { ...COMMANDS[1], description: "an older description" },
      { name: "retired", description: "old" },
    ] as unknown as Record<string, unknown>[];
    const changes = diffCommands(registered, COMMANDS);
    expect(changes.unchanged).toEqual(["chat"]);
    expect(changes.updated).toEqual(["remember"]);
    expect(changes.removed).toEqual(["retired"]);
    expect(changes.added).toEqual(["recall", "forget", "tools", "agent", "task", "settings"]);
  });
});
