// After the reply, off the caller's critical path: the reply and its spend are stored, the turn's
// record kept for the inspector, and the evaluators run (after-reply/), the memory ones among them.
import type { Character } from "../../character.ts";
import { runEvaluators } from "../../after-reply/evaluators.ts";
import {
  finishInspection,
  type InspectionDraft,
  type PendingInspections,
} from "../turn-inspection.ts";
import { modelChoiceFor, type TurnRunnerDeps } from "../turn-deps.ts";
import type { TurnInput, TurnOutcome } from "../turn-types.ts";
import { recordTurnUsage } from "./usage.ts";

export async function afterReply(
  deps: TurnRunnerDeps,
  pending: PendingInspections | null,
  turn: { character: Character; input: TurnInput; outcome: TurnOutcome },
): Promise<void> {
  const { character, input, outcome } = turn;
  const memory = deps.afterReplyMemory ?? deps.memory;
  const draft = pending?.take(outcome.turnId);
  // The reply and its spend are stored before the evaluators that may read the conversation
  // run; the interaction count runs alongside them (a store may send the three together), and
  // so does the turn's record for the inspector.
  const stored = Promise.all([
    draft && outcome.status === "replied" ? recordInspection(deps, input, outcome, draft) : null,
    outcome.replyMemory ? memory.saveMemory(outcome.replyMemory) : null,
    outcome.spent || outcome.spentTokens
      ? recordTurnUsage(deps, input, {
          // Outcomes journalled before `spent` was kept count their tokens as input.
          spent: outcome.spent ?? {
            inputTokens: outcome.spentTokens ?? 0,
            outputTokens: 0,
            modelCalls: 0,
          },
          model: outcome.model,
          tools: outcome.toolCalls,
          error: outcome.stopReason === "timeout" ? "turn_timeout" : null,
          lateEmbeddings: outcome.queryEmbedding === "late" ? 1 : 0,
        })
      : null,
  ]);
  const small = deps.model
    ? { client: deps.model, name: modelChoiceFor(character, deps.models).small }
    : null;
  const context = {
    character,
    input,
    outcome,
    memory,
    clock: deps.clock,
    model: small,
    retriever: deps.retriever ?? null,
    interactions: null,
  };
  await runEvaluators(deps.evaluators, context, {
    timeoutMs: deps.limits.evaluatorTimeoutMs,
    events: deps.events,
    stored,
  });
}

/** The inspector's record of a replied turn; losing it is logged, never a failed turn. */
async function recordInspection(
  deps: TurnRunnerDeps,
  input: TurnInput,
  outcome: TurnOutcome,
  draft: InspectionDraft,
): Promise<void> {
  if (!deps.inspections) return;
  const ids = { agentId: input.agentId, roomId: input.roomId, userId: input.userId };
  try {
    await deps.inspections.record(
      finishInspection(draft, outcome, ids, deps.tokens, deps.clock.now()),
    );
  } catch (error) {
    deps.events.emit({
      type: "inspection_not_recorded",
      turnId: input.turnId,
      agentId: input.agentId,
      roomId: input.roomId,
      at: deps.clock.now(),
      reason: error instanceof Error ? error.message : String(error),
    });
  }
}
