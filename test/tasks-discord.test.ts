// `/task goal:<text>` on Discord: acknowledged at once (type 5), then the agent's AgentTasks object
// posts the plan, a line per finished step and the result to the interaction.
import { describe, expect, it } from "vitest";
import { command, post, snowflake, useAgentIn, useDiscordStandIns } from "./helpers/discord.ts";
import {
  evaluateReply,
  planReply,
  reflectReply,
  scriptTask,
  standInResponder,
} from "./helpers/task-script.ts";

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
});
