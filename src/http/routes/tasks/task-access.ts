// Who may read, answer or cancel a task, and what they see afterwards. The rules are the one
// check's `task.read` and `task.answer` (src/runtime/access/): the task's requester, or a token of
// the same user prefix. REST and the MCP server's `get_task` read through here, so a task of
// another tenant answers exactly as a task that does not exist, and a list leaves it out.
import { z } from "@hono/zod-openapi";
import type { Env } from "../../../env.ts";
import { authorize, decide, type Principal } from "../../../runtime/access/index.ts";
import { NotFoundError } from "../../../runtime/util/errors.ts";
import { getTask } from "../../../objects/tasks/task-client.ts";
import type { TaskView } from "../../../objects/tasks/task-requests.ts";
import { TASK_STATUSES, TaskResponse, taskJson } from "./task-json.ts";

const TaskStatusOnly = z
  .object({ taskId: z.string(), status: z.enum(TASK_STATUSES) })
  .openapi("TaskStatusOnly");

export const TaskAnswerResponse = z.union([TaskResponse, TaskStatusOnly]);

const noSuchTask = (agentId: string, taskId: string) =>
  new NotFoundError(`no task "${taskId}" for agent "${agentId}"`);

/** Whether this principal may read a task (or a schedule) started by `requester`. */
export function mayReadTask(
  principal: Principal,
  agentId: string,
  requester: Principal | null | undefined,
): boolean {
  return decide(principal, "task.read", { agentId, requester: requester ?? null }).allowed;
}

/** The task, when this principal may read it; otherwise 404, the same as an unknown task. */
export async function readableTask(
  env: Env,
  principal: Principal,
  agentId: string,
  taskId: string,
): Promise<TaskView> {
  const view = await getTask(env, agentId, taskId);
  if (!view || !mayReadTask(principal, agentId, view.state.requester))
    throw noSuchTask(agentId, taskId);
  return view;
}

/** 404 for an unknown task, 403 when this principal may not answer or cancel it. */
export async function assertMayAnswerTask(
  env: Env,
  principal: Principal,
  agentId: string,
  taskId: string,
): Promise<void> {
  const view = await getTask(env, agentId, taskId);
  if (!view) throw noSuchTask(agentId, taskId);
  authorize(principal, "task.answer", { agentId, requester: view.state.requester });
}

/** The task after an answer: all of it for a principal that may read it, else its status. */
export async function taskAfterAnswer(
  env: Env,
  principal: Principal,
  agentId: string,
  taskId: string,
) {
  const view = await getTask(env, agentId, taskId);
  if (!view) throw noSuchTask(agentId, taskId);
  if (!mayReadTask(principal, agentId, view.state.requester))
    return { taskId: view.state.taskId, status: view.state.status };
  return taskJson(view.state, view.audit);
}
