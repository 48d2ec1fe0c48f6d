// The per-agent daily ceiling on model spend (tokens, UTC days). A turn checks it before its first
// model call and refuses with 429 (Retry-After: the next UTC midnight) once the day's tokens reach
// it; what a turn spends is added afterwards. The check is per turn, so the turn that crosses the
// ceiling finishes: the ceiling can be passed by at most one turn's worth per room. The ceiling is
// the turn's character's: a room's copy of it must pass its version check before a refusal counts
// (turn-runner.ts), so a changed ceiling applies from the next turn.
import type { Character } from "../character.ts";
import { RateLimitedError } from "../util/errors.ts";

export interface SpendLedger {
  spentOn(agentId: string, day: string): Promise<number>;
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
  outputTokens: number;
  modelCalls: number;
  tools: Array<{ name: string; ok: boolean }>;
  /** The error's code when the work failed; null when it did not. */
  error: string | null;
  /** Query embeddings that missed their budget: searches made by text alone. */
  lateEmbeddings: number;
  at: number;
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

export async function assertWithinDailyBudget(
  ledger: SpendLedger,
  agentId: string,
  ceiling: number | null,
  now: number,
): Promise<void> {
  if (ceiling === null) return;
  const spent = await ledger.spentOn(agentId, utcDay(now));
  if (spent < ceiling) return;
  const retryAfterSeconds = Math.ceil((DAY_MS - (now % DAY_MS)) / 1000);
  throw new RateLimitedError(
    `agent "${agentId}" has used its daily model budget (${spent} of ${ceiling} tokens today, UTC); it resets at 00:00 UTC`,
    retryAfterSeconds,
    { spentTokens: spent, dailyTokens: ceiling },
  );
}
