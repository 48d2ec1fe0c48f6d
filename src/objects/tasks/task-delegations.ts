// delegate_task between agents' task objects: what a parent's step asks of the other agent's
// AgentTasks (a task with the parent's remaining budget, the chain of agents so far, and a key
// that makes a repeated request find the same task), and what the child's result becomes for the
// parent's step (its result quoted as data, or why there is none, with its model use). The
// peers are reached over RPC (TaskPeers, over the TASKS binding).
import { delegatedPrincipal } from "../../runtime/turn/delegation.ts";
import { inheritedPlace, type PlacePolicy } from "../../runtime/access/place-policy.ts";
import type { Env } from "../../env.ts";
import { quoteData, TOOL_RESULT_PREAMBLE } from "../../runtime/context/quoted-data.ts";
import { clip } from "../../runtime/tasks/task-plan.ts";
import {
  DEFAULT_TASK_LIMITS,
  type TaskLimits,
  type TaskState,
} from "../../runtime/tasks/task-types.ts";
import { spentTokens } from "../../runtime/tasks/advance-task.ts";
import type { ModelUsage, ToolOutput } from "../../runtime/ports/tools.ts";
import type { CreateTaskRequest, CreateTaskResult, DelegationNotice } from "./task-requests.ts";

/** The smallest budget a delegated task gets, whatever the parent has left. */
const MIN_CHILD_BUDGET = 1_000;

/** Other agents' task objects, as a parent or a child reaches them. */
export interface TaskPeers {
  createTask(agentId: string, request: CreateTaskRequest): Promise<CreateTaskResult>;
  delegationFinished(agentId: string, notice: DelegationNotice): Promise<void>;
  cancel(agentId: string, taskId: string): Promise<void>;
}

export function createTaskPeers(env: Env): TaskPeers {
  return {
    async createTask(agentId, request) {
      const result: unknown = await env.TASKS.getByName(agentId).createTask(request);
      return result as CreateTaskResult;
    },
    async delegationFinished(agentId, notice) {
      await env.TASKS.getByName(agentId).delegationFinished(notice);
    },
    async cancel(agentId, taskId) {
      await env.TASKS.getByName(agentId).cancel(taskId);
    },
  };
}

/** The task a parent's waiting step asks the other agent for. */
export function childRequest(parentAgentId: string, parent: TaskState): CreateTaskRequest {
  const delegation = parent.delegation!;
  return {
    goal: delegation.goal,
    source: "delegation",
    limits: childLimits(parent),
    parent: {
      agentId: parentAgentId,
      taskId: parent.taskId,
      step: delegation.step,
      callId: delegation.callId,
    },
    chain: [...parent.chain, parentAgentId],
    // The child acts for whoever the parent acts for: a delegation never widens authority.
    ...(parent.requester ? { requester: delegatedPrincipal(parentAgentId, parent.requester) } : {}),
    // The place the parent was started from still holds: its tools and budgets (issue 53).
    ...placeOf(parent.place),
    originKey: `${parentAgentId}:${parent.taskId}:${delegation.callId}`,
  };
}

/** The child spends at most what the parent has left (its budget holds across both). */
function childLimits(parent: TaskState): TaskLimits {
  const left = parent.limits.budgetTokens - spentTokens(parent);
  return {
    ...DEFAULT_TASK_LIMITS,
    budgetTokens: Math.max(MIN_CHILD_BUDGET, Math.min(DEFAULT_TASK_LIMITS.budgetTokens, left)),
  };
}

/** What a finished child tells its parent's step: its result, or how and why it stopped. */
export function childNotice(childAgentId: string, child: TaskState): DelegationNotice {
  const parent = child.parent!;
  const usage = totalUsage(child);
  const output: ToolOutput =
    child.status === "completed"
      ? {
          ok: true,
          // Another agent's words: data for the parent, not instructions.
          content: quoteData(
            `Result of agent ${childAgentId}'s task`,
            [
              {
                source: `agent ${childAgentId}, task ${child.taskId}`,
                text: child.result?.text ?? "",
              },
            ],
            TOOL_RESULT_PREAMBLE,
          ),
          usage,
        }
      : {
          ok: false,
          error: clip(
            `agent "${childAgentId}"'s task ended ${child.status} (${child.stopReason ?? "unknown"}): ${child.report ?? child.error?.message ?? "no report"}`,
            2_000,
          ),
          usage,
        };
  return {
    parentTaskId: parent.taskId,
    callId: parent.callId,
    childAgentId,
    childTaskId: child.taskId,
    status: child.status,
    output,
  };
}

function totalUsage(state: TaskState): ModelUsage {
  const delegated = state.usage.delegated;
  return {
    promptTokens: state.usage.promptTokens + (delegated?.promptTokens ?? 0),
    completionTokens: state.usage.completionTokens + (delegated?.completionTokens ?? 0),
    modelCalls: state.usage.modelCalls + (delegated?.modelCalls ?? 0),
  };
}

function placeOf(place: PlacePolicy | null): { place: PlacePolicy } | Record<string, never> {
  const inherited = inheritedPlace(place);
  return inherited ? { place: inherited } : {};
}
