// The task a delegated step asks another agent for (delegate_task): it acts for whoever the parent
// acts for, and keeps the place the parent was started from (its tools and budgets), so a member's
// server rules hold in the other agent's task too (issue 53).
import { describe, expect, it } from "vitest";
import { childRequest } from "../../../src/objects/tasks/task-delegations.ts";
import { newTask } from "../../helpers/task-harness.ts";
import type { PlacePolicy } from "../../../src/runtime/access/place-policy.ts";

const member = {
  kind: "member" as const,
  platform: "discord" as const,
  userId: "discord:42",
  manager: false,
  owner: false,
  guildId: "900",
};

function delegating(place: PlacePolicy | null) {
  const parent = newTask({ requester: member, place, chain: [] });
  parent.delegation = {
    step: 1,
    stepStartedAt: 0,
    callId: "call-1",
    agentId: "bob",
    goal: "Fetch the tide table",
    requestedAt: 0,
    expiresAt: 1,
    checkpoint: {
      messages: [],
      turnStart: 0,
      step: 0,
      consecutiveFailures: 0,
      records: [],
      pendingCalls: [],
      model: "main",
      modelIndex: 0,
      usage: { promptTokens: 0, completionTokens: 0, modelCalls: 0 },
    },
    childTaskId: null,
    output: null,
  };
  return parent;
}

describe("a delegated step's task", () => {
  it("keeps the parent's place: its withheld tools, tool list and budgets", () => {
    const request = childRequest(
      "ada",
      delegating({
        respond: "never",
        tools: ["search"],
        withheldTools: ["remember"],
        budgets: { member: 1_000, server: 5_000 },
      }),
    );
    expect(request.place).toEqual({
      tools: ["search"],
      withheldTools: ["remember"],
      budgets: { member: 1_000, server: 5_000 },
    });
    expect(request.requester).toEqual({ kind: "agent", agentId: "ada", for: member });
  });

  it("carries no place when the parent had none (an API token's task)", () => {
    expect(childRequest("ada", delegating(null)).place).toBeUndefined();
  });
});
