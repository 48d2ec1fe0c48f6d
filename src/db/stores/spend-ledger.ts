// Model tokens spent per agent per UTC day, in D1, for the daily ceiling
// (DAILY_TOKEN_LIMIT / a character's settings.dailyTokens), and each unit of work's usage record
// (usage_records: GET /agents/:id/usage). A turn's record and its day's tokens are one batch, off
// the reply path, sent in the room's shared trip with the reply's own write (src/db/shared-trips.ts).
import { and, eq, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { BUDGET_USED, type SpendLedger, utcDay } from "../../runtime/turn/spend.ts";
import { compiled } from "../memory/compiled.ts";
import type { Db } from "../db.ts";
import { modelUsageDaily, usageRecords } from "../schema.ts";

/** One turn's tokens onto the agent's day: every turn makes this write. */
const addTokens = compiled((db) =>
  db
    .insert(modelUsageDaily)
    .values({
      agentId: sql.placeholder("agentId"),
      day: sql.placeholder("day"),
      tokens: sql.placeholder("tokens"),
    })
    .onConflictDoUpdate({
      target: [modelUsageDaily.agentId, modelUsageDaily.day],
      set: { tokens: sql`${modelUsageDaily.tokens} + ${sql.placeholder("tokens")}` },
    }),
);

/** A unit of work's usage; recorded again (a resumed turn's second part), it adds. */
const addUsage = compiled((db) => {
  const value = (name: string) => sql.placeholder(name);
  const added = (column: { name: string }, name: string) =>
    sql`${sql.identifier(column.name)} + ${sql.placeholder(name)}`;
  return db
    .insert(usageRecords)
    .values({
      id: value("id"),
      agentId: value("agentId"),
      kind: value("kind"),
      day: value("day"),
      roomId: value("roomId"),
      userId: value("userId"),
      guildId: value("guildId"),
      source: value("source"),
      model: value("model"),
      inputTokens: value("inputTokens"),
      cachedInputTokens: value("cachedInputTokens"),
      outputTokens: value("outputTokens"),
      modelCalls: value("modelCalls"),
      tools: value("tools"),
      toolCalls: value("toolCalls"),
      error: value("error"),
      lateEmbeddings: value("lateEmbeddings"),
      createdAt: value("createdAt"),
    })
    .onConflictDoUpdate({
      target: [usageRecords.agentId, usageRecords.id],
      set: {
        inputTokens: added(usageRecords.inputTokens, "inputTokens"),
        cachedInputTokens: added(usageRecords.cachedInputTokens, "cachedInputTokens"),
        outputTokens: added(usageRecords.outputTokens, "outputTokens"),
        modelCalls: added(usageRecords.modelCalls, "modelCalls"),
        toolCalls: added(usageRecords.toolCalls, "toolCalls"),
        lateEmbeddings: added(usageRecords.lateEmbeddings, "lateEmbeddings"),
        tools: sql`(SELECT json_group_array(value) FROM (SELECT value FROM json_each(${usageRecords.tools}) UNION ALL SELECT value FROM json_each(${sql.placeholder("tools")})))`,
        model: sql`coalesce(${sql.placeholder("model")}, ${usageRecords.model})`,
        error: sql`${sql.placeholder("error")}`,
      },
    });
});

/**
 * The agent's day, the member's and the server's, and whether the member was told today: one
 * statement (usage_records_member_idx, usage_records_server_idx). The member's day is in the
 * server when there is one; without one (Telegram), everywhere on their platform.
 */
const spentToday = compiled(() => {
  const day = sql.placeholder("day");
  const user = sql.placeholder("userId");
  const guild = sql.placeholder("guildId");
  const tokens = sql`coalesce(sum(${usageRecords.inputTokens} + ${usageRecords.outputTokens}), 0)`;
  const memberRows = sql`${usageRecords.userId} = ${user} AND ${usageRecords.day} = ${day}
    AND (${guild} IS NULL OR ${usageRecords.guildId} = ${guild})`;
  return {
    toSQL: () =>
      dialect.sqlToQuery(sql`SELECT
        coalesce((SELECT ${modelUsageDaily.tokens} FROM ${modelUsageDaily}
          WHERE ${modelUsageDaily.agentId} = ${sql.placeholder("agentId")} AND ${modelUsageDaily.day} = ${day}), 0) AS agent,
        (SELECT ${tokens} FROM ${usageRecords} WHERE ${memberRows}) AS member,
        (SELECT ${tokens} FROM ${usageRecords}
          WHERE ${guild} IS NOT NULL AND ${usageRecords.guildId} = ${guild} AND ${usageRecords.day} = ${day}) AS server,
        EXISTS (SELECT 1 FROM ${usageRecords} WHERE ${memberRows}
          AND ${usageRecords.error} IN ('${sql.raw(BUDGET_USED.member)}', '${sql.raw(BUDGET_USED.server)}')) AS noticed`),
  };
});
const dialect = new SQLiteAsyncDialect();

export function createD1SpendLedger(db: Db): SpendLedger {
  return {
    async spentOn(agentId, day) {
      const row = await db
        .select({ tokens: modelUsageDaily.tokens })
        .from(modelUsageDaily)
        .where(and(eq(modelUsageDaily.agentId, agentId), eq(modelUsageDaily.day, day)))
        .get();
      return row?.tokens ?? 0;
    },
    async spentToday(query) {
      const row = await spentToday
        .bind(db, { ...query })
        .first<{ agent: number; member: number; server: number; noticed: number }>();
      return {
        agent: Number(row?.agent ?? 0),
        member: Number(row?.member ?? 0),
        server: Number(row?.server ?? 0),
        noticed: Boolean(row?.noticed),
      };
    },
    async add(agentId, day, tokens) {
      await addTokens.bind(db, { agentId, day, tokens }).run();
    },
    async record(usage) {
      const day = utcDay(usage.at);
      const tokens = usage.inputTokens + usage.outputTokens;
      const record = addUsage.bind(db, {
        ...usage,
        cachedInputTokens: usage.cachedInputTokens ?? 0,
        day,
        tools: JSON.stringify(usage.tools),
        toolCalls: usage.tools.length,
        createdAt: usage.at,
      });
      await db.$client.batch(
        tokens > 0
          ? [record, addTokens.bind(db, { agentId: usage.agentId, day, tokens })]
          : [record],
      );
    },
  };
}
