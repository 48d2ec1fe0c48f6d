// Answers to a paused task over REST, for tasks started where nobody can be asked (REST, a
// schedule, another agent's delegation): a tool approval (`POST …/approval {approve}`) and the
// question of a `needs_input` task (`POST …/input {text}`). A Discord task waits for the person
// who started it (their click or modal), so the API answers 409 there.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import { guard } from "../../auth.ts";
import { assertAgentExists } from "../../known-agents.ts";
import { AgentIdParam, errorContent, jsonContent } from "../../schemas.ts";
import { ConflictError, NotFoundError } from "../../../runtime/util/errors.ts";
import { answerTaskApproval, answerTaskInput } from "../../../objects/tasks/task-client.ts";
import { assertMayAnswerTask, TaskAnswerResponse, taskAfterAnswer } from "./task-access.ts";
import { TaskIdParam } from "./tasks.ts";

/** What an answer to a question may hold (the Discord modal takes as much). */
export const MAX_INPUT_CHARS = 2_000;

export function taskAnswerRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  const params = z.object({ agentId: AgentIdParam, taskId: TaskIdParam });

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/tasks/{taskId}/approval",
      summary:
        "Answer a task waiting for approval of a tool call (tasks started over REST or by a schedule)",
      ...guard("messages:write"),
      request: {
        params,
        body: {
          required: true,
          content: {
            "application/json": {
              schema: z.strictObject({ approve: z.boolean() }).openapi("TaskApprovalAnswer"),
            },
          },
        },
      },
      responses: {
        200: jsonContent(
          TaskAnswerResponse,
          "The task after the answer: it carries on with the tool run (approve) or refused (deny); all of it with `agents:read`, else its id and status",
        ),
        403: errorContent("The task was started by another tenant's token"),
        404: errorContent("No such agent or task"),
        409: errorContent(
          "The task is not waiting for an approval, or waits for the person who started it on Discord",
        ),
      },
    }),
    async (c) => {
      const { agentId, taskId } = c.req.valid("param");
      const { approve } = c.req.valid("json");
      const body = await answerTask(
        c,
        { agentId, taskId },
        () => answerTaskApproval(c.env, agentId, taskId, approve),
        (status) =>
          `this task is not waiting for an approval (it is ${status}); an approval is answered once, and expires after 10 minutes`,
      );
      return c.json(body, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/tasks/{taskId}/input",
      summary:
        "Answer the question of a task that needs an input to go on (`needs_input`, tasks started over REST or by a schedule)",
      ...guard("messages:write"),
      request: {
        params,
        body: {
          required: true,
          content: {
            "application/json": {
              schema: z
                .strictObject({
                  text: z.string().trim().min(1, "must not be empty").max(MAX_INPUT_CHARS),
                })
                .openapi("TaskInputAnswer"),
            },
          },
        },
      },
      responses: {
        200: jsonContent(
          TaskAnswerResponse,
          "The task after the answer: the answer joins its spec and it plans from there; all of it with `agents:read`, else its id and status",
        ),
        403: errorContent("The task was started by another tenant's token"),
        404: errorContent("No such agent or task"),
        409: errorContent(
          "The task is not waiting for an input, or waits for the person who started it on Discord",
        ),
      },
    }),
    async (c) => {
      const { agentId, taskId } = c.req.valid("param");
      const { text } = c.req.valid("json");
      const body = await answerTask(
        c,
        { agentId, taskId },
        () => answerTaskInput(c.env, agentId, taskId, text),
        (status) =>
          `this task is not waiting for an input (it is ${status}); a question is answered once, and expires after 24 hours`,
      );
      return c.json(body, 200);
    },
  );

  return app;
}

/**
 * One answer to a paused task, either kind: the agent and the caller's right to answer checked,
 * the answer handed to the task, and the task after it; 404 without the task, 409 when it waits
 * for someone on Discord or for no answer of this kind (`notWaiting` says so with its status).
 */
async function answerTask(
  c: Context<AppEnv>,
  { agentId, taskId }: { agentId: string; taskId: string },
  answer: () => Promise<{ status: string; taskStatus?: string | null } | null>,
  notWaiting: (taskStatus: string) => string,
) {
  await assertAgentExists(c.env, agentId);
  await assertMayAnswerTask(c.env, c.get("principal"), agentId, taskId);
  const result = await answer();
  if (!result) throw new NotFoundError(`no task "${taskId}" for agent "${agentId}"`);
  if (result.status === "on_discord" || result.status === "not_yours")
    throw new ConflictError(
      "this task waits for the answer of the person who started it on Discord",
    );
  if (result.status !== "resolved")
    throw new ConflictError(notWaiting(result.taskStatus ?? "unknown"));
  return taskAfterAnswer(c.env, c.get("principal"), agentId, taskId);
}
