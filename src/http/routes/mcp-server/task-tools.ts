// `start_task` and `get_task`: an autonomous task on the URL's agent, started as POST
// /agents/:agentId/tasks starts one (its own room `task:<taskId>`, the default limits, the token
// as its requester), and read back under the task rule of the one check (`task.read`), through
// the same door as GET /agents/:agentId/tasks/:taskId: a task of another tenant answers exactly as
// a task that does not exist.
import type { CallToolResult } from "@modelcontextprotocol/server";
import { z } from "zod";
import { loadConfig, MODEL_NOT_CONFIGURED_MESSAGE } from "../../../config.ts";
import { createTask } from "../../../objects/tasks/task-client.ts";
import { authorize } from "../../../runtime/access/index.ts";
import { DEFAULT_TASK_LIMITS, MAX_GOAL_CHARS } from "../../../runtime/tasks/task-types.ts";
import { ModelNotConfiguredError } from "../../../runtime/util/errors.ts";
import { tokenPrincipalOf } from "../../app-env.ts";
import { readableTask } from "../tasks/task-access.ts";
import { taskJson } from "../tasks/task-json.ts";
import type { McpCallContext } from "./context.ts";

export const StartTaskInput = z.strictObject({
  goal: z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(MAX_GOAL_CHARS)
    .describe("What the task should achieve; it plans and acts in the background"),
});

export const StartTaskOutput = z.object({ taskId: z.string() });

export const GetTaskInput = z.strictObject({
  taskId: z
    .string()
    .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "task ids are UUIDs")
    .describe("The id start_task returned"),
});

export async function startTask(
  ctx: McpCallContext,
  args: z.infer<typeof StartTaskInput>,
): Promise<CallToolResult> {
  const { env, principal, agentId } = ctx;
  authorize(principal, "message.send", { agentId });
  // Refused at once rather than accepted to fail in the background, as over REST.
  if (loadConfig(env).model.kind === "none")
    throw new ModelNotConfiguredError(MODEL_NOT_CONFIGURED_MESSAGE);
  const { taskId } = await createTask(env, agentId, {
    goal: args.goal,
    source: "api",
    requester: tokenPrincipalOf(principal),
    limits: { ...DEFAULT_TASK_LIMITS },
  });
  return {
    content: [
      { type: "text", text: `Task ${taskId} started; follow it with get_task {"taskId"}.` },
    ],
    structuredContent: { taskId },
  };
}

export async function getTaskTool(
  ctx: McpCallContext,
  args: z.infer<typeof GetTaskInput>,
): Promise<CallToolResult> {
  const { env, principal, agentId } = ctx;
  const view = await readableTask(env, principal, agentId, args.taskId);
  const task = taskJson(view.state, view.audit);
  return {
    content: [{ type: "text", text: JSON.stringify(task) }],
    structuredContent: task,
  };
}
