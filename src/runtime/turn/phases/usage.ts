// Usage: what a turn spent, written to the spend ledger (turn/spend.ts) from this one place. A
// reply's spend is counted after the reply, off the caller's path (after-reply.ts); a pause, a
// failure and a place's used budget are counted as the turn ends (turn-runner.ts).
import { originOf } from "../../access/principal.ts";
import type { ModelSession } from "../model-session.ts";
import type { UsageRecord } from "../spend.ts";
import type { TurnRunnerDeps } from "../turn-deps.ts";
import type { Spent, TurnInput } from "../turn-types.ts";

/** What one run of a turn is charged with, and how it ended. */
export interface TurnCharge {
  spent: Spent;
  model: string | null;
  tools: ReadonlyArray<{ name: string; ok: boolean }>;
  /** Why it ended without an answer (an error code, a used budget's name); null when it did not. */
  error: string | null;
  /** 1 when the query's embedding missed its budget (the turn searched by text alone). */
  lateEmbeddings?: number;
}

/** Counting never fails a turn: a lost count only makes the ceiling more lenient (and is logged). */
export async function recordTurnUsage(
  deps: TurnRunnerDeps,
  input: TurnInput,
  charge: TurnCharge,
): Promise<void> {
  if (!deps.spend) return;
  const usage = usageRecord(deps, input, charge);
  const tokens = usage.inputTokens + usage.outputTokens;
  if (tokens <= 0 && usage.modelCalls === 0 && usage.error === null) return;
  try {
    await deps.spend.record(usage);
  } catch (error) {
    deps.events.emit({
      type: "spend_not_recorded",
      agentId: usage.agentId,
      tokens,
      at: deps.clock.now(),
      reason: error instanceof Error ? error.message : String(error),
    });
  }
}

/** What this run spent (a resumed turn's earlier part was counted when it paused). */
export function spentSince(
  session: ModelSession | null,
  before: Partial<ModelSession["usage"]> | undefined,
): Spent {
  const now = session?.usage ?? { promptTokens: 0, completionTokens: 0, modelCalls: 0 };
  return {
    inputTokens: Math.max(0, now.promptTokens - (before?.promptTokens ?? 0)),
    cachedInputTokens: Math.max(
      0,
      (now.cachedPromptTokens ?? 0) - (before?.cachedPromptTokens ?? 0),
    ),
    outputTokens: Math.max(0, now.completionTokens - (before?.completionTokens ?? 0)),
    modelCalls: Math.max(0, now.modelCalls - (before?.modelCalls ?? 0)),
  };
}

/** The turn's usage record: who it was for, where, what it spent. */
function usageRecord(deps: TurnRunnerDeps, input: TurnInput, charge: TurnCharge): UsageRecord {
  const origin = input.principal ? originOf(input.principal) : null;
  const { spent } = charge;
  return {
    id: input.turnId,
    agentId: input.agentId,
    kind: "turn",
    roomId: input.roomId,
    userId: input.userId,
    guildId: origin?.kind === "member" ? (origin.guildId ?? null) : null,
    source: input.source,
    model: charge.model,
    ...spent,
    cachedInputTokens: spent.cachedInputTokens ?? 0,
    tools: charge.tools.map(({ name, ok }) => ({ name, ok })),
    error: charge.error,
    lateEmbeddings: charge.lateEmbeddings ?? 0,
    at: deps.clock.now(),
  };
}
