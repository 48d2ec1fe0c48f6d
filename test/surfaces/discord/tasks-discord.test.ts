// `/task goal:<text>` on Discord: acknowledged at once (type 5), then the agent's AgentTasks object
// posts the plan, a line per finished step and the result to the interaction. A task that lacks a
// required input posts its question with an Answer button whose modal only the requester can use.
import { describe, expect, it, vi } from "vitest";
import {
  click,
  command,
  modalSubmit,
  post,
  snowflake,
  useAgentIn,
  useDiscordStandIns,
} from "../../helpers/discord.ts";
import {
  evaluateReply,
  oneStepScript,
  planReply,
  reflectReply,
  scriptTask,
  specReply,
  standInResponder,
} from "../../helpers/task-script.ts";

const { model, discord } = useDiscordStandIns();

describe("Discord /task", () => {
  it("defers, then posts the plan, each step and the result to the channel's interaction", async () => {
    const channel = snowflake();
    await useAgentIn(channel);
    model.respondWith(
      standInResponder(
        scriptTask({
          plan: [planReply(["Check the time", "Answer"], ["The time is given"])],
          act: [
            { toolCalls: [{ name: "current_time", arguments: {} }] },
            { text: "It is noon UTC." },
            { text: "It's noon (UTC)." },
          ],
          reflect: [reflectReply(true), reflectReply(true)],
          evaluate: [evaluateReply([true], "It's noon (UTC).")],
        }),
      ),
    );
    const response = await post(
      command("task", { channel, options: [{ name: "goal", type: 3, value: "What time is it?" }] }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ type: 5 });

    const calls = await discord.waitForCalls(4);
    const posted = calls.map((call) => [
      call.method,
      call.path.replace(/tok-\d+/, "TOKEN"),
      (call.body as { content: string }).content,
    ]);
    expect(posted).toEqual([
      [
        "PATCH",
        `/api/v10/webhooks/100000000000000001/TOKEN/messages/@original`,
        "📋 Plan:\n1. Check the time\n2. Answer",
      ],
      ["POST", `/api/v10/webhooks/100000000000000001/TOKEN`, "✅ Step 1: It is noon UTC."],
      ["POST", `/api/v10/webhooks/100000000000000001/TOKEN`, "✅ Step 2: It's noon (UTC)."],
      ["POST", `/api/v10/webhooks/100000000000000001/TOKEN`, "🏁 Done: It's noon (UTC)."],
    ]);
  });

  it("asks for a goal when none is given", async () => {
    const channel = snowflake();
    await useAgentIn(channel);
    const response = await post(
      command("task", { channel, options: [{ name: "goal", type: 3, value: "   " }] }),
    );
    expect(await response.json()).toMatchObject({
      type: 4,
      data: { content: "`/task` needs a goal." },
    });
  });

  it("posts a needs_input question with an Answer button whose modal only the requester can use", async () => {
    const channel = snowflake();
    const agentId = await useAgentIn(channel);
    const goal = "Book a table for dinner";
    model.respondWith(
      standInResponder(
        scriptTask({
          spec: [
            specReply(goal, {
              missing: [{ input: "people", question: "For how many people?", required: true }],
            }),
          ],
          ...oneStepScript("Booked for 4."),
        }),
      ),
    );
    const requester = "700000000000000001";
    const response = await post(
      command("task", {
        channel,
        user: requester,
        options: [{ name: "goal", type: 3, value: goal }],
      }),
    );
    expect(await response.json()).toEqual({ type: 5 });

    // The question replaces "thinking…", with one Answer button.
    const [question] = await discord.waitForCalls(1);
    const body = question!.body as {
      content: string;
      components: { components: { label: string; custom_id: string }[] }[];
    };
    expect(question!.method).toBe("PATCH");
    expect(body.content).toContain("For how many people?");
    expect(body.content).toContain(`Only <@${requester}> can answer`);
    const button = body.components[0]!.components[0]!;
    expect(button.label).toBe("Answer");
    expect(button.custom_id).toMatch(new RegExp(`^tin:[0-9a-f]{16}:${agentId}$`));

    // Anyone else is told privately; the requester gets the modal.
    const stranger = await post(click(channel, "700000000000000099", button.custom_id));
    expect(await stranger.json()).toMatchObject({
      type: 4,
      data: {
        content: "Only the person who started this task can answer its question.",
        flags: 64,
      },
    });
    const opened = await post(click(channel, requester, button.custom_id));
    const modal = await opened.json<{
      type: number;
      data: { custom_id: string; components: { components: { custom_id: string }[] }[] };
    }>();
    expect(modal.type).toBe(9);
    expect(modal.data.custom_id).toBe(button.custom_id.replace(/^tin:/, "tinm:"));
    const field = modal.data.components[0]!.components[0]!.custom_id;

    // A stranger's submission counts for nothing; the requester's answers and updates the question.
    const forged = await post(
      modalSubmit(channel, "700000000000000099", modal.data.custom_id, { [field]: "40" }),
    );
    expect(await forged.json()).toMatchObject({ type: 4, data: { flags: 64 } });
    const answered = await post(
      modalSubmit(channel, requester, modal.data.custom_id, { [field]: "4" }),
    );
    expect(await answered.json()).toMatchObject({
      type: 7,
      data: { content: expect.stringContaining("answered: 4"), components: [] },
    });

    // The task plans with the answer and finishes, on the submission's fresh token.
    await vi.waitFor(
      () =>
        expect(discord.calls.map((call) => (call.body as { content?: string }).content)).toContain(
          "🏁 Done: Booked for 4.",
        ),
      { timeout: 10_000 },
    );
    const commandToken = question!.path.split("/")[5]!;
    expect(discord.calls.slice(1).some((call) => call.path.includes(commandToken))).toBe(false);
    const again = await post(click(channel, requester, button.custom_id));
    expect(await again.json()).toMatchObject({
      data: { content: expect.stringContaining("no longer waiting for an answer") },
    });
  });
});
