// What an agent's work spent, grouped: GET /agents/:agentId/usage?by=user|room|day|model|tool|guild.
// Read from the usage records each turn, task unit and caption leaves (src/db/schema.ts
// usage_records, written with the day's tokens in the turn's own D1 trip). A token limited to a
// user prefix sees only the records of its own users. With `settings.prices` in the character, each
// row carries an estimated cost. Records past USAGE_ROLLUP_AFTER_DAYS are summed per day and key
// (src/db/stores/usage-rollup.ts): every grouping still answers the same. Read over a D1 session
// from the caller's D1-Bookmark (../bookmarks.ts).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { catalogIn, stores } from "../../db/stores/index.ts";
import { answerBookmarks, sessionsOf } from "../bookmarks.ts";
import { authorize } from "../../runtime/access/authorize.ts";
import type { RuntimeSettings } from "../../runtime/character.ts";
import { utcDay } from "../../runtime/turn/spend.ts";
import { NotFoundError, ValidationError } from "../../runtime/util/errors.ts";
import { AgentIdParam, errorContent } from "../schemas.ts";

const GROUPINGS = ["user", "room", "day", "model", "tool", "guild"] as const;
type Grouping = (typeof GROUPINGS)[number];

/** The column each grouping keys on; `tool` keys on each call's name (json_each over `tools`). */
const KEY_OF: Record<Exclude<Grouping, "tool">, string> = {
  user: "user_id",
  room: "room_id",
  day: "day",
  model: "model",
  guild: "guild_id",
};

const DAY_MS = 86_400_000;
const DEFAULT_DAYS = 30;
const MAX_DAYS = 366;

const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "a UTC day, YYYY-MM-DD")
  .refine((day) => {
    const at = Date.parse(`${day}T00:00:00Z`);
    // Date.parse rolls 2026-02-30 over into March: the day must come back as it was written.
    return !Number.isNaN(at) && new Date(at).toISOString().slice(0, 10) === day;
  }, "not a calendar day");

const UsageQuery = z.object({
  by: z.enum(GROUPINGS).openapi({ description: "What the rows are grouped by" }),
  since: Day.optional().openapi({ description: "First UTC day, inclusive (default: 29 days ago)" }),
  until: Day.optional().openapi({ description: "Last UTC day, inclusive (default: today)" }),
  kind: z
    .enum(["turn", "task", "caption"])
    .optional()
    .openapi({ description: "Only this kind of work (default: all)" }),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const UsageRow = z
  .object({
    key: z.string().nullable().openapi({
      description:
        "The user, room, day, model, tool or guild; null for work without one (a REST turn has no guild)",
    }),
    turns: z.number().int().openapi({ description: "Units of work: turns, task units, captions" }),
    modelCalls: z.number().int(),
    inputTokens: z.number().int(),
    cachedInputTokens: z.number().int().openapi({
      description:
        "Of inputTokens, those the provider read from its prompt cache (priced at cachedInputPerMillion)",
    }),
    outputTokens: z.number().int(),
    toolCalls: z.number().int(),
    lateEmbeddings: z.number().int().openapi({
      description:
        "Turns whose query embedding missed settings.memory.embeddingBudgetMs and searched memory by text alone",
    }),
    errors: z.number().int().openapi({
      description: "Units that failed (by=tool: calls of that tool that failed)",
    }),
    costUsd: z.number().optional().openapi({
      description: "Estimated from settings.prices; absent when a model of the row has no price",
    }),
  })
  .openapi("UsageRow");

const UsageAnswer = z
  .object({
    by: z.enum(GROUPINGS),
    since: z.string(),
    until: z.string(),
    rows: z.array(UsageRow),
  })
  .openapi("Usage");

interface Aggregate {
  key: string | null;
  model: string | null;
  turns: number;
  model_calls: number;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  tool_calls: number;
  late_embeddings: number;
  errors: number;
}

type Prices = NonNullable<RuntimeSettings["prices"]>;

/**
 * One statement: the records in the window (and of the token's users), grouped by the key and the
 * model, so costs can be priced per model before the rows are summed per key.
 */
function usageStatement(
  agentId: string,
  window: { since: string; until: string },
  by: Grouping,
  kind: string | undefined,
  userPrefix: string | null,
): { sql: string; params: unknown[] } {
  const where = ["r.agent_id = ?", "r.day >= ?", "r.day <= ?"];
  const params: unknown[] = [agentId, window.since, window.until];
  if (kind) {
    where.push("r.kind = ?");
    params.push(kind);
  }
  if (userPrefix !== null) {
    // substr, not LIKE: a prefix may hold `_` or `%`.
    where.push("substr(r.user_id, 1, length(?)) = ?");
    params.push(userPrefix, userPrefix);
  }
  const filter = where.join(" AND ");
  // A record's tool entry is one call ({name, ok}); a rolled-up record's sums a tool's calls over
  // its units ({name, units, calls, failed}, src/db/stores/usage-rollup.ts). Not `key` for the
  // name: GROUP BY would take json_each's own `key` column (the call's index) for it.
  if (by === "tool")
    return {
      sql: `SELECT tool AS key, model, sum(units) AS turns, 0 AS model_calls, 0 AS input_tokens,
        0 AS cached_input_tokens, 0 AS output_tokens, sum(calls) AS tool_calls, 0 AS late_embeddings, sum(failed) AS errors
      FROM (
        SELECT r.id, json_extract(t.value, '$.name') AS tool, r.model AS model,
          coalesce(sum(json_extract(t.value, '$.units')), 1) AS units,
          sum(coalesce(json_extract(t.value, '$.calls'), 1)) AS calls,
          sum(coalesce(json_extract(t.value, '$.failed'), json_extract(t.value, '$.ok') = 0)) AS failed
        FROM usage_records r, json_each(r.tools) t WHERE ${filter}
        GROUP BY r.id, tool
      ) GROUP BY tool, model`,
      params,
    };
  const key = KEY_OF[by];
  return {
    sql: `SELECT r.${key} AS key, r.model AS model, sum(r.units) AS turns,
      sum(r.model_calls) AS model_calls, sum(r.input_tokens) AS input_tokens,
      sum(r.cached_input_tokens) AS cached_input_tokens, sum(r.output_tokens) AS output_tokens, sum(r.tool_calls) AS tool_calls,
      sum(r.late_embeddings) AS late_embeddings,
      sum(CASE WHEN r.error IS NULL THEN 0 ELSE r.units END) AS errors
    FROM usage_records r WHERE ${filter}
    GROUP BY r.${key}, r.model`,
    params,
  };
}

function rowsOf(aggregates: Aggregate[], by: Grouping, prices: Prices | undefined, limit: number) {
  const rows = new Map<string | null, z.infer<typeof UsageRow> & { priced: boolean }>();
  for (const part of aggregates) {
    const row = rows.get(part.key) ?? {
      key: part.key,
      turns: 0,
      modelCalls: 0,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
      toolCalls: 0,
      lateEmbeddings: 0,
      errors: 0,
      costUsd: 0,
      priced: prices !== undefined,
    };
    // by=tool: a unit that called two tools counts under each, once.
    row.turns += part.turns;
    row.modelCalls += part.model_calls;
    row.inputTokens += part.input_tokens;
    row.cachedInputTokens += part.cached_input_tokens;
    row.outputTokens += part.output_tokens;
    row.toolCalls += part.tool_calls;
    row.lateEmbeddings += part.late_embeddings;
    row.errors += part.errors;
    const price = part.model === null ? undefined : prices?.[part.model];
    const tokens = part.input_tokens + part.output_tokens;
    if (price) row.costUsd = (row.costUsd ?? 0) + costOf(part, price);
    else if (tokens > 0) row.priced = false;
    rows.set(part.key, row);
  }
  const ordered = [...rows.values()].sort((a, b) =>
    by === "day"
      ? String(a.key).localeCompare(String(b.key))
      : b.inputTokens + b.outputTokens - (a.inputTokens + a.outputTokens) ||
        b.toolCalls - a.toolCalls ||
        String(a.key).localeCompare(String(b.key)),
  );
  return ordered.slice(0, limit).map(({ priced, costUsd, ...row }) =>
    // Rounded to a millionth of a dollar: the estimate is no finer than that.
    priced && by !== "tool" ? { ...row, costUsd: Math.round((costUsd ?? 0) * 1e6) / 1e6 } : row,
  );
}

/**
 * Dollars for one (key, model) part. Cached input is part of the input (as OpenAI counts it) and
 * costs cachedInputPerMillion when the price names one, the input price otherwise.
 */
function costOf(part: Aggregate, price: Prices[string]): number {
  const cached = Math.min(part.cached_input_tokens, part.input_tokens);
  const cachedPrice = price.cachedInputPerMillion ?? price.inputPerMillion;
  return (
    ((part.input_tokens - cached) * price.inputPerMillion +
      cached * cachedPrice +
      part.output_tokens * price.outputPerMillion) /
    1e6
  );
}

export function usageRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/usage",
      summary: "What the agent's work spent, by user, room, day, model, tool or guild",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam }), query: UsageQuery },
      responses: {
        200: {
          description: "One row per key, the most tokens first (by=day: in day order)",
          content: { "application/json": { schema: UsageAnswer } },
        },
        400: errorContent("Invalid grouping or days"),
        403: errorContent("The token may not read this agent"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const query = c.req.valid("query");
      const principal = c.get("principal");
      authorize(principal, "agent.read", { agentId });
      const until = query.until ?? utcDay(Date.now());
      const since =
        query.since ?? utcDay(Date.parse(`${until}T00:00:00Z`) - (DEFAULT_DAYS - 1) * DAY_MS);
      const days = (Date.parse(`${until}T00:00:00Z`) - Date.parse(`${since}T00:00:00Z`)) / DAY_MS;
      if (days < 0) throw new ValidationError("`since` is after `until`");
      if (days >= MAX_DAYS)
        throw new ValidationError(`at most ${MAX_DAYS} days at once (asked for ${days + 1})`);
      const sessions = sessionsOf(c);
      const agent = await stores(c.env).agents.get(agentId);
      if (!agent) throw new NotFoundError(`no agent with id "${agentId}"`);
      // A token limited to a user prefix sees the work done for its own users only.
      const userPrefix = principal.kind === "token" ? principal.userPrefix : null;
      const { sql, params } = usageStatement(
        agentId,
        { since, until },
        query.by,
        query.kind,
        userPrefix,
      );
      const { results } = await catalogIn(c.env, sessions)
        .$client.prepare(sql)
        .bind(...params)
        .all<Aggregate>();
      const prices = agent.character.settings.prices;
      answerBookmarks(c, sessions);
      return c.json(
        { by: query.by, since, until, rows: rowsOf(results, query.by, prices, query.limit) },
        200,
      );
    },
  );
  return app;
}
