// Autonomous tasks over REST: start one (202, it runs in the agent's AgentTasks object), read its
// state, plan, steps, audit trail and result, cancel it, and watch its progress as server-sent
// events. The event stream replays everything after `Last-Event-ID` (ids grow monotonically per
// agent), so a client that lost its connection reconnects without missing or repeating an event.
// Every read asks `task.read` (task-access.ts): another tenant's task is a 404 and lists leave it
// out. A task's pauses (an approval, a question) are answered in answer-routes.ts; an agent with 50
// tasks already waiting refuses a new one (429).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type AppEnv, tokenPrincipalOf } from "../../app-env.ts";
import { guard } from "../../auth.ts";
import { isAdminToken } from "../../../runtime/access/index.ts";
import { assertMayNameRoom } from "../../namespaces.ts";
import { assertAgentExists } from "../../known-agents.ts";
import { AgentIdParam, errorContent, ExternalId, jsonContent } from "../../schemas.ts";
import { loadConfig, MODEL_NOT_CONFIGURED_MESSAGE } from "../../../config.ts";
import {
  ModelNotConfiguredError,
  NotFoundError,
  RateLimitedError,
} from "../../../runtime/util/errors.ts";
import {
  DEFAULT_TASK_LIMITS,
  MAX_GOAL_CHARS,
  MAX_QUEUED_TASKS,
  MAX_TASK_BUDGET_TOKENS,
  MAX_TASK_FAILURES,
  MAX_TASK_STEPS,
} from "../../../runtime/tasks/task-types.ts";
import {
  cancelTask,
  createTask,
  listTasks,
  watchTask,
} from "../../../objects/tasks/task-client.ts";
import { MAX_TASK_EVENT_WATCHERS } from "../../../objects/tasks/event-feed.ts";
import { TaskResponse, taskJson } from "./task-json.ts";
import {
  assertMayAnswerTask,
  mayReadTask,
  readableTask,
  TaskAnswerResponse,
  taskAfterAnswer,
} from "./task-access.ts";

/** Retry-After of a refused event stream: a minute frees most watchers of a busy agent. */
const EVENTS_BUSY_RETRY_S = 60;

/** The list's largest page, and how many of the newest tasks a list reads before filtering. */
const MAX_LISTED_TASKS = 100;

export const TaskIdParam = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, "task ids are UUIDs")
  .openapi({ param: { name: "taskId", in: "path" } });

export const TaskBody = z
  .strictObject({
    goal: z.string().trim().min(1, "must not be empty").max(MAX_GOAL_CHARS),
    roomId: ExternalId.optional().openapi({
      description: "Room whose tools' context the task uses; defaults to `task:<taskId>`",
    }),
    maxSteps: z
      .number()
      .int()
      .min(1)
      .max(MAX_TASK_STEPS)
      .optional()
      .openapi({
        description: `Act steps in all, retries included (default ${DEFAULT_TASK_LIMITS.maxSteps})`,
      }),
    maxFailures: z
      .number()
      .int()
      .min(1)
      .max(MAX_TASK_FAILURES)
      .optional()
      .openapi({
        description: `Counted failures in a row before giving up (default ${DEFAULT_TASK_LIMITS.maxFailures})`,
      }),
    budgetTokens: z
      .number()
      .int()
      .min(1_000)
      .max(MAX_TASK_BUDGET_TOKENS)
      .optional()
      .openapi({
        description: `Model tokens the task may spend (default ${DEFAULT_TASK_LIMITS.budgetTokens})`,
      }),
  })
  .openapi("TaskRequest");

const TaskSummary = z.object({
  taskId: z.string(),
  goal: z.string(),
  status: z.string(),
  source: z.string(),
  scheduleId: z.string().nullable(),
  stopReason: z.string().nullable(),
  createdAt: z.number(),
  finishedAt: z.number().nullable(),
});

export function taskRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  const params = z.object({ agentId: AgentIdParam, taskId: TaskIdParam });

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/tasks",
      summary:
        "Start an autonomous task: the agent plans, acts with its tools and checks its work until done or out of budget",
      ...guard("messages:write"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        body: { required: true, content: { "application/json": { schema: TaskBody } } },
      },
      responses: {
        202: jsonContent(
          z.object({ taskId: z.string() }),
          "The task is accepted and runs in the background",
        ),
        400: errorContent("Invalid request"),
        404: errorContent("No such agent"),
        429: errorContent(
          `The agent already has ${MAX_QUEUED_TASKS} tasks waiting for a free slot (Retry-After says when to try again)`,
        ),
        503: errorContent("No model is configured"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.valid("json");
      if (body.roomId !== undefined) assertMayNameRoom(c.get("principal"), body.roomId);
      await assertAgentExists(c.env, agentId);
      // Refused at once rather than accepted to fail in the background.
      if (loadConfig(c.env).model.kind === "none")
        throw new ModelNotConfiguredError(MODEL_NOT_CONFIGURED_MESSAGE);
      const { taskId } = await createTask(c.env, agentId, {
        goal: body.goal,
        roomId: body.roomId,
        source: "api",
        requester: tokenPrincipalOf(c.get("principal")),
        limits: {
          maxSteps: body.maxSteps ?? DEFAULT_TASK_LIMITS.maxSteps,
          maxFailures: body.maxFailures ?? DEFAULT_TASK_LIMITS.maxFailures,
          budgetTokens: body.budgetTokens ?? DEFAULT_TASK_LIMITS.budgetTokens,
          wallClockMs: DEFAULT_TASK_LIMITS.wallClockMs,
        },
      });
      c.header("Location", `/agents/${agentId}/tasks/${taskId}`);
      return c.json({ taskId }, 202);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/tasks",
      summary:
        "The agent's tasks this token may read, newest first (finished ones are kept 7 days)",
      description: `A token other than admin sees the tasks of its own tenant (its user prefix, or none) among the agent's ${MAX_LISTED_TASKS} newest.`,
      ...guard("agents:read"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        query: z.strictObject({
          limit: z.coerce.number().int().min(1).max(MAX_LISTED_TASKS).default(20),
        }),
      },
      responses: {
        200: jsonContent(z.object({ tasks: z.array(TaskSummary) }), "Tasks"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const { limit } = c.req.valid("query");
      const principal = c.get("principal");
      await assertAgentExists(c.env, agentId);
      // The task object lists by agent, not by requester: a tenant's page is cut from the agent's
      // newest tasks after those of other tenants are dropped, so they take no place in it.
      const everyone = isAdminToken(principal);
      const states = (await listTasks(c.env, agentId, everyone ? limit : MAX_LISTED_TASKS)).filter(
        (state) => everyone || mayReadTask(principal, agentId, state.requester),
      );
      return c.json(
        {
          tasks: states.slice(0, limit).map((state) => ({
            taskId: state.taskId,
            goal: state.goal,
            status: state.status,
            source: state.source,
            scheduleId: state.scheduleId,
            stopReason: state.stopReason,
            createdAt: state.createdAt,
            finishedAt: state.finishedAt,
          })),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/tasks/{taskId}",
      summary: "A task's status, plan, steps, audit trail of tool calls, result and usage",
      ...guard("agents:read"),
      request: { params },
      responses: {
        200: jsonContent(TaskResponse, "The task"),
        404: errorContent(
          "No such agent or task, or a task of another tenant (as if it did not exist)",
        ),
      },
    }),
    async (c) => {
      const { agentId, taskId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      const view = await readableTask(c.env, c.get("principal"), agentId, taskId);
      return c.json(taskJson(view.state, view.audit), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/tasks/{taskId}",
      summary: "Cancel a task (a running step is stopped); a finished task is left as it is",
      ...guard("messages:write"),
      request: { params },
      responses: {
        200: jsonContent(
          TaskAnswerResponse,
          "The task after cancelling: all of it with `agents:read`, else its id and status",
        ),
        403: errorContent("The task was started by another tenant's token or another person"),
        404: errorContent("No such agent or task"),
      },
    }),
    async (c) => {
      const { agentId, taskId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      await assertMayAnswerTask(c.env, c.get("principal"), agentId, taskId);
      const state = await cancelTask(c.env, agentId, taskId);
      if (!state) throw new NotFoundError(`no task "${taskId}" for agent "${agentId}"`);
      return c.json(await taskAfterAnswer(c.env, c.get("principal"), agentId, taskId), 200);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/tasks/{taskId}/events",
      summary:
        "The task's progress as server-sent events (plan, step_started, tool_called, step_finished, reflection, summary, evaluation, done); replays after Last-Event-ID",
      ...guard("agents:read"),
      request: {
        params,
        headers: z.object({
          "last-event-id": z
            .string()
            .regex(/^\d{1,15}$/, "must be the id of an event received earlier")
            .optional()
            .openapi({
              param: { name: "last-event-id", in: "header" },
              description: "Replay only the events after this one",
            }),
        }),
      },
      responses: {
        200: {
          description: "An event stream; it ends after the `done` event",
          content: { "text/event-stream": { schema: z.string() } },
        },
        400: errorContent("Invalid Last-Event-ID"),
        404: errorContent(
          "No such agent or task, or a task of another tenant (as if it did not exist)",
        ),
        429: errorContent(
          `The agent already serves ${MAX_TASK_EVENT_WATCHERS} event streams (Retry-After says when to try again)`,
        ),
      },
    }),
    async (c) => {
      const { agentId, taskId } = c.req.valid("param");
      const after = Number(c.req.valid("header")["last-event-id"] ?? "0");
      await assertAgentExists(c.env, agentId);
      // The events carry the plan, tool calls and result: the task's read rule, asked first.
      await readableTask(c.env, c.get("principal"), agentId, taskId);
      // The task's object writes the events into the stream as they happen: nothing polls.
      const watched = await watchTask(c.env, agentId, taskId, after);
      if (!watched) throw new NotFoundError(`no task "${taskId}" for agent "${agentId}"`);
      if (watched === "busy")
        throw new RateLimitedError(
          `agent "${agentId}" already serves ${MAX_TASK_EVENT_WATCHERS} task event streams; close one or try again later`,
          EVENTS_BUSY_RETRY_S,
        );
      return new Response(watched.stream, {
        status: 200,
        headers: {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          connection: "keep-alive",
        },
      });
    },
  );

  return app;
}
