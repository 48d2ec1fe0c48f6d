// A task started in a chat place keeps that place's rules at every model call and every tool call
// of every step (issue 53): a withheld tool is neither offered nor run when the model names it
// anyway, and a place's budget used mid-task stops the task before its next model call.
import { describe, expect, it } from "vitest";
import { planReply, reflectReply } from "../../helpers/task-script.ts";
import { newTask, runToPause, taskHarness } from "../../helpers/task-harness.ts";
import { PlaceBudgetUsed } from "../../../src/runtime/turn/spend.ts";
import type { ToolSpec } from "../../../src/runtime/ports/model.ts";

const memberPrincipal = {
  kind: "member" as const,
  platform: "discord" as const,
  userId: "discord:42",
  manager: false,
  owner: false,
  guildId: "900",
};

describe("a task under its place's rules", () => {
  it("offers no withheld tool in any step, and refuses one the model names anyway", async () => {
    const h = taskHarness({
      plan: [planReply(["Search", "Fetch"], ["Both tried"])],
      act: [
        { toolCalls: [{ name: "search", arguments: { q: "tides" } }] },
        { text: "searched" },
        // Named although it was not offered: the call is refused, nothing runs.
        { toolCalls: [{ name: "fetch_page", arguments: { url: "https://x.example" } }] },
        { text: "could not fetch" },
      ],
      reflect: [reflectReply(true), reflectReply(true)],
    });
    const state = newTask({
      requester: memberPrincipal,
      place: { withheldTools: ["fetch_page"] },
    });
    await runToPause(h, state);
    const offered = h.model.requests
      .filter((request) => (request.tools ?? []).length > 0)
      .map((request) => (request.tools as ToolSpec[]).map((tool) => tool.name));
    expect(offered.length).toBeGreaterThan(0);
    for (const names of offered) expect(names).not.toContain("fetch_page");
    // The planner is told only of the tools the place allows.
    const planner = h.model.requests.find((request) =>
      String(request.messages[0]?.content).includes("Tools the agent has"),
    );
    expect(String(planner?.messages[0]?.content)).not.toContain("fetch_page");
    expect(h.toolCalls).toEqual(['search:{"q":"tides"}']);
    expect(h.audit.find((entry) => entry.tool === "fetch_page")).toMatchObject({ ok: false });
  });

  it("keeps a channel's tool list at every step", async () => {
    const h = taskHarness({
      plan: [planReply(["Fetch"], ["Fetched"])],
      act: [{ toolCalls: [{ name: "search", arguments: { q: "x" } }] }, { text: "no search here" }],
      reflect: [reflectReply(true)],
    });
    await runToPause(h, newTask({ requester: memberPrincipal, place: { tools: ["fetch_page"] } }));
    expect(h.toolCalls).toEqual([]);
  });

  it("stops before the next model call once the place's budget is used mid-task", async () => {
    const h = taskHarness({
      plan: [planReply(["One", "Two", "Three"], ["All done"])],
      act: [{ text: "one done" }, { text: "two done" }, { text: "three done" }],
      reflect: [reflectReply(true), reflectReply(true), reflectReply(true)],
    });
    // The member's day: each call adds 120 tokens; the budget is used after the fourth call.
    let admitted = 0;
    h.deps.admitModelCall = async () => {
      if (admitted * 120 >= 480) throw new PlaceBudgetUsed("member", admitted * 120, 480, false);
      admitted += 1;
    };
    const final = await runToPause(h, newTask({ requester: memberPrincipal }));
    expect(final.status).toBe("exhausted");
    expect(final.stopReason).toBe("place_budget");
    expect(final.report).toContain("the member's daily budget is used (480 of 480 tokens");
    // spec, plan, one act round, one reflection: then nothing more reached the model.
    expect(h.model.requests).toHaveLength(4);
    expect(final.usage.modelCalls).toBe(4);
  });

  it("makes no model call at all when the budget is used before the task starts", async () => {
    const h = taskHarness({ plan: [planReply(["One"], ["Done"])] });
    h.deps.admitModelCall = async () => {
      throw new PlaceBudgetUsed("server", 5_000, 1_000, true);
    };
    const final = await runToPause(h, newTask({ requester: memberPrincipal }));
    expect(final.stopReason).toBe("place_budget");
    expect(h.model.requests).toHaveLength(0);
    expect(final.usage.modelCalls).toBe(0);
  });
});
