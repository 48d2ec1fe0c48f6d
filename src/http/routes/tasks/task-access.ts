// Who may answer or cancel a task over REST, and what they see afterwards. The rule is the one
// check's `task.answer` (src/runtime/access/): the task's requester, or a token of the same user
// prefix. A token without `agents:read` gets only the task's new status back: the whole task
// (goal, spec, audit with tool arguments and results) is for readers of the agent.
import { z } from "@hono/zod-openapi";
import type { Env } from "../../../env.ts";
import type { Principal } from "../../app-env.ts";
import { hasScope } from "../../auth.ts";
import { authorize } from "../../../runtime/access/index.ts";
import { NotFoundError } from "../../../runtime/util/errors.ts";
import { getTask } from "../../../objects/tasks/task-client.ts";
import { TASK_STATUSES, TaskResponse, taskJson } from "./task-json.ts";

const TaskStatusOnly = z
  .object({ taskId: z.string(), status: z.enum(TASK_STATUSES) })
  .openapi("TaskStatusOnly");

export const TaskAnswerResponse = z.union([TaskResponse, TaskStatusOnly]);

/** 404 for an unknown task, 403 when this principal may not answer or cancel it. */
export async function assertMayAnswerTask(
  env: Env,
  principal: Principal,
  agentId: string,
  taskId: string,
): Promise<void> {
  const view = await getTask(env, agentId, taskId);
  if (!view) throw new NotFoundError(`no task "${taskId}" for agent "${agentId}"`);
  authorize(principal, "task.answer", { agentId, requester: view.state.requester });
}

/** The task after an answer: all of it for a token that may read the agent, else its status. */
export async function taskAfterAnswer(
  env: Env,
  principal: Principal,
  agentId: string,
  taskId: string,
) {
  const view = await getTask(env, agentId, taskId);
  if (!view) throw new NotFoundError(`no task "${taskId}" for agent "${agentId}"`);
  if (!hasScope(principal, "agents:read"))
    return { taskId: view.state.taskId, status: view.state.status };
  return taskJson(view.state, view.audit);
}
