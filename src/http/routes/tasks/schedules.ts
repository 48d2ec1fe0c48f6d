// Recurring (or one-time) work for an agent: each firing starts an autonomous task with the
// schedule's goal, through the Durable Object scheduler of the agent's AgentTasks object. A firing
// while the previous run is unfinished is skipped (and counted), never run twice at once. A
// schedule is read like the tasks it starts (`task.read`, task-access.ts): the list shows a token
// its own tenant's schedules only.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type AppEnv, tokenPrincipalOf } from "../../app-env.ts";
import { authorize } from "../../../runtime/access/index.ts";
import { guard } from "../../auth.ts";
import { assertMayNameRoom } from "../../namespaces.ts";
import { mayReadTask } from "./task-access.ts";
import { assertAgentExists } from "../../known-agents.ts";
import { AgentIdParam, errorContent, ExternalId, jsonContent } from "../../schemas.ts";
import { ConflictError, NotFoundError, ValidationError } from "../../../runtime/util/errors.ts";
import { MAX_GOAL_CHARS } from "../../../runtime/tasks/task-types.ts";
import type { ScheduleRequest } from "../../../objects/tasks/task-requests.ts";
import {
  createSchedule,
  deleteSchedule,
  listSchedules,
} from "../../../objects/tasks/task-client.ts";

/** Longest interval: a year. */
export const MAX_EVERY_SECONDS = 365 * 24 * 60 * 60;
const MAX_AHEAD_MS = 366 * 24 * 60 * 60 * 1000;

const ScheduleBody = z
  .strictObject({
    goal: z.string().trim().min(1, "must not be empty").max(MAX_GOAL_CHARS),
    roomId: ExternalId.optional(),
    cron: z
      .string()
      .trim()
      .min(9)
      .max(100)
      .optional()
      .openapi({ description: "Five-field cron expression, UTC", example: "0 9 * * 1" }),
    at: z.iso
      .datetime({ offset: true })
      .optional()
      .openapi({ description: "One run at this time (ISO 8601)" }),
    everySeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_EVERY_SECONDS)
      .optional()
      .openapi({ description: "A run every N seconds" }),
  })
  .refine(
    (body) => [body.cron, body.at, body.everySeconds].filter((v) => v !== undefined).length === 1,
    {
      message: "give exactly one of cron, at or everySeconds",
    },
  )
  .openapi("ScheduleRequest");

const ScheduleOut = z
  .object({
    scheduleId: z.string(),
    kind: z.enum(["cron", "at", "every"]),
    when: z.string(),
    goal: z.string(),
    roomId: z.string().nullable(),
    createdAt: z.number(),
    runs: z.number(),
    skipped: z.number(),
    lastRunAt: z.number().nullable(),
    lastTaskId: z.string().nullable(),
    lastStatus: z.string().nullable(),
    active: z.boolean(),
  })
  .openapi("Schedule");

export function scheduleRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "post",
      path: "/agents/{agentId}/schedules",
      summary: "Schedule recurring or one-time tasks (cron, at, or everySeconds)",
      ...guard("messages:write"),
      request: {
        params: z.object({ agentId: AgentIdParam }),
        body: { required: true, content: { "application/json": { schema: ScheduleBody } } },
      },
      responses: {
        201: jsonContent(ScheduleOut, "The schedule"),
        400: errorContent(
          "Invalid request (including an invalid cron expression or a time in the past)",
        ),
        404: errorContent("No such agent"),
        409: errorContent("The agent has too many schedules"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.valid("json");
      if (body.roomId !== undefined) assertMayNameRoom(c.get("principal"), body.roomId);
      await assertAgentExists(c.env, agentId);
      const request: ScheduleRequest = {
        goal: body.goal,
        roomId: body.roomId ?? null,
        ...when(body),
        createdBy: tokenPrincipalOf(c.get("principal")),
      };
      const result = await createSchedule(c.env, agentId, request);
      if (!result.ok)
        throw result.code === "conflict"
          ? new ConflictError(result.message)
          : new ValidationError(result.message);
      return c.json(scheduleJson(result.schedule), 201);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/schedules",
      summary:
        "An agent's schedules this token may read (its own tenant's), with their runs, skipped overlapping firings and the last run's status",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam }) },
      responses: {
        200: jsonContent(z.object({ schedules: z.array(ScheduleOut) }), "Schedules"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      const principal = c.get("principal");
      const schedules = (await listSchedules(c.env, agentId)).filter((schedule) =>
        mayReadTask(principal, agentId, schedule.createdBy),
      );
      return c.json({ schedules: schedules.map(scheduleJson) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/agents/{agentId}/schedules/{scheduleId}",
      summary: "Delete a schedule (a run already started finishes)",
      ...guard("messages:write"),
      request: {
        params: z.object({
          agentId: AgentIdParam,
          scheduleId: z
            .string()
            .regex(/^[0-9a-f-]{36}$/, "schedule ids are UUIDs")
            .openapi({ param: { name: "scheduleId", in: "path" } }),
        }),
      },
      responses: {
        204: { description: "Deleted" },
        403: errorContent("The schedule was created by another tenant's token"),
        404: errorContent("No such agent or schedule"),
      },
    }),
    async (c) => {
      const { agentId, scheduleId } = c.req.valid("param");
      await assertAgentExists(c.env, agentId);
      // Like a task, a schedule is stopped only by its creator's tenant (or admin).
      const record = (await listSchedules(c.env, agentId)).find(
        (schedule) => schedule.scheduleId === scheduleId,
      );
      if (record)
        authorize(c.get("principal"), "task.answer", {
          agentId,
          requester: record.createdBy ?? null,
        });
      if (!(await deleteSchedule(c.env, agentId, scheduleId)))
        throw new NotFoundError(`no schedule "${scheduleId}" for agent "${agentId}"`);
      return c.body(null, 204);
    },
  );

  return app;
}

function when(body: {
  cron?: string;
  at?: string;
  everySeconds?: number;
}): Pick<ScheduleRequest, "kind" | "when"> {
  if (body.everySeconds !== undefined) return { kind: "every", when: String(body.everySeconds) };
  if (body.at !== undefined) {
    const at = Date.parse(body.at);
    const now = Date.now();
    if (at <= now) throw new ValidationError("invalid request body: at: must be in the future");
    if (at - now > MAX_AHEAD_MS)
      throw new ValidationError("invalid request body: at: must be within a year");
    return { kind: "at", when: new Date(at).toISOString() };
  }
  return { kind: "cron", when: body.cron! };
}

function scheduleJson(record: {
  scheduleId: string;
  kind: "cron" | "at" | "every";
  when: string;
  goal: string;
  roomId: string | null;
  createdAt: number;
  runs: number;
  skipped: number;
  lastRunAt: number | null;
  lastTaskId: string | null;
  lastStatus: string | null;
  active: boolean;
}) {
  return {
    scheduleId: record.scheduleId,
    kind: record.kind,
    when: record.when,
    goal: record.goal,
    roomId: record.roomId,
    createdAt: record.createdAt,
    runs: record.runs,
    skipped: record.skipped,
    lastRunAt: record.lastRunAt,
    lastTaskId: record.lastTaskId,
    lastStatus: record.lastStatus,
    active: record.active,
  };
}
