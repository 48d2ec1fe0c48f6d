// The per-agent daily ceiling on model spend (tokens, UTC days). A turn checks it before its first
// model call and refuses with 429 (Retry-After: the next UTC midnight) once the day's tokens reach
// it; what a turn spends is added afterwards. The check is per turn, so the turn that crosses the
// ceiling finishes: the ceiling can be passed by at most one turn's worth per room. The ceiling is
// the turn's character's: a room's copy of it must pass its version check before a refusal counts
// (turn-runner.ts), so a changed ceiling applies from the next turn.
//
// A chat place's budgets (a Discord server's `dailyTokens` and `memberDailyTokens`, a Telegram or
// Slack client's) are read in the same trip, from the usage records: a member or server over one
// gets one notice a day and no model call; everyone else goes on.
import type { Character } from "../character.ts";
import { originOf, type Principal } from "../access/principal.ts";
import type { PlacePolicy } from "../access/place-policy.ts";
import { RateLimitedError } from "../util/errors.ts";

export interface SpendLedger {
  spentOn(agentId: string, day: string): Promise<number>;
  /**
   * The agent's day and a chat place's days in one read: the member's tokens (in the server, when
   * there is one, else everywhere on their platform), the server's over every agent and member,
   * and whether the member was already told today that a budget is used.
   */
  spentToday(query: PlaceSpendQuery): Promise<PlaceSpend>;
  /** Tokens onto the agent's day with no usage record: another agent's work charged to its caller. */
  add(agentId: string, day: string, tokens: number): Promise<void>;
  /**
   * One unit of the agent's own work (a turn, a task step, a caption): its usage record, and its
   * tokens onto the agent's day, written together. Recording the same id again adds to it (a turn
   * that paused for an approval records each part).
   */
  record(usage: UsageRecord): Promise<void>;
}

/**
 * What one unit of work spent, and for whom: the one per-turn usage record that the daily ceiling,
 * the usage route (GET /agents/:id/usage) and per-person and per-server budgets read.
 */
export interface UsageRecord {
  /** The turn's id (a task step's, a caption's post id). */
  id: string;
  agentId: string;
  kind: "turn" | "task" | "caption";
  roomId: string | null;
  userId: string | null;
  /** The chat platform's server (a Discord guild), when the work came from one. */
  guildId: string | null;
  /** The surface: "rest", "discord", ... */
  source: string | null;
  /** The model that answered last; null when none did. */
  model: string | null;
  inputTokens: number;
  /** Of `inputTokens`, those the provider read from its prompt cache (absent: none reported). */
  cachedInputTokens?: number;
  outputTokens: number;
  modelCalls: number;
  tools: Array<{ name: string; ok: boolean }>;
  /** The error's code when the work failed; null when it did not. */
  error: string | null;
  /** Query embeddings that missed their budget: searches made by text alone. */
  lateEmbeddings: number;
  at: number;
}

export interface PlaceSpendQuery {
  agentId: string;
  day: string;
  userId: string;
  /** The server (a Discord guild, a Slack workspace); null where there is none (Telegram). */
  guildId: string | null;
}

export interface PlaceSpend {
  agent: number;
  member: number;
  /** 0 without a server. */
  server: number;
  /** A budget notice went to this member today (in this server). */
  noticed: boolean;
}

/** The usage record's error of a turn refused for a place's budget: its notice, or its silence. */
export const BUDGET_USED = { member: "member_budget", server: "server_budget" } as const;

/** A place's budget that stops the turn before the model: which, and whether to say so. */
export class PlaceBudgetUsed extends Error {
  readonly scope: "member" | "server";
  /** Said once a day per member; afterwards the turn is stored and left unanswered. */
  readonly notice: string | null;
  constructor(
    scope: "member" | "server",
    spent: number,
    ceiling: number,
    noticed: boolean,
    /** What the platform calls a server ("workspace" on Slack). */
    server = "server",
  ) {
    super(`the ${scope}'s daily budget is used (${spent} of ${ceiling} tokens today, UTC)`);
    this.name = "PlaceBudgetUsed";
    this.scope = scope;
    this.notice = noticed
      ? null
      : scope === "member"
        ? "Your budget for today is used; it resets at 00:00 UTC."
        : `This ${server}'s budget for today is used; it resets at 00:00 UTC.`;
  }
}

const DAY_MS = 86_400_000;

export function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

export function dailyCeiling(
  character: Character,
  deploymentDefault: number | null,
): number | null {
  return character.settings.dailyTokens ?? deploymentDefault;
}

/**
 * The agent's ceiling and a place's budgets (PlacePolicy.budgets), from one read. The agent's
 * ceiling refuses (429, as assertWithinDailyBudget); a place's budget resolves to the budget that
 * is used, so the turn ends without the model; null: the turn may go on.
 */
export async function checkDailyBudgets(
  ledger: SpendLedger,
  query: Omit<PlaceSpendQuery, "day"> & { platform?: string },
  ceiling: number | null,
  budgets: { member?: number; server?: number },
  now: number,
): Promise<PlaceBudgetUsed | null> {
  const spent = await ledger.spentToday({ ...query, day: utcDay(now) });
  if (ceiling !== null && spent.agent >= ceiling) refuse(query.agentId, spent.agent, ceiling, now);
  if (budgets.member !== undefined && spent.member >= budgets.member)
    return new PlaceBudgetUsed("member", spent.member, budgets.member, spent.noticed);
  if (budgets.server !== undefined && query.guildId !== null && spent.server >= budgets.server)
    return new PlaceBudgetUsed(
      "server",
      spent.server,
      budgets.server,
      spent.noticed,
      query.platform === "slack" ? "workspace" : "server",
    );
  return null;
}

/**
 * The day's budgets before a model call, in one read: the agent's ceiling (a 429), and the
 * place's (PlacePolicy.budgets: the member's, the server's) for a member's work there, which
 * resolve to the budget that is used. A principal that is not a member, or a place without
 * budgets, reads the agent's ceiling only.
 */
export function readDayBudgets(
  ledger: SpendLedger,
  work: {
    agentId: string;
    principal: Principal | null | undefined;
    place: PlacePolicy | null | undefined;
    ceiling: number | null;
    now: number;
  },
): Promise<PlaceBudgetUsed | null> {
  const budgets = work.place?.budgets;
  const origin = work.principal ? originOf(work.principal) : null;
  if (!budgets || origin?.kind !== "member")
    return assertWithinDailyBudget(ledger, work.agentId, work.ceiling, work.now).then(() => null);
  const place = {
    agentId: work.agentId,
    userId: origin.userId,
    guildId: origin.guildId ?? null,
    platform: origin.platform,
  };
  return checkDailyBudgets(ledger, place, work.ceiling, budgets, work.now);
}

function refuse(agentId: string, spent: number, ceiling: number, now: number): never {
  const retryAfterSeconds = Math.ceil((DAY_MS - (now % DAY_MS)) / 1000);
  throw new RateLimitedError(
    `agent "${agentId}" has used its daily model budget (${spent} of ${ceiling} tokens today, UTC); it resets at 00:00 UTC`,
    retryAfterSeconds,
    { spentTokens: spent, dailyTokens: ceiling },
  );
}

export async function assertWithinDailyBudget(
  ledger: SpendLedger,
  agentId: string,
  ceiling: number | null,
  now: number,
): Promise<void> {
  if (ceiling === null) return;
  const spent = await ledger.spentOn(agentId, utcDay(now));
  if (spent < ceiling) return;
  refuse(agentId, spent, ceiling, now);
}
