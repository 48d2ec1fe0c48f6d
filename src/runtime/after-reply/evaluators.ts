// Evaluators run after the reply has gone out, so they never delay it. Each is time-bounded and
// isolated: one failing is reported as an event and does not stop the others or fail the turn.
// They must be idempotent, since an evicted turn re-runs its evaluation phase.
import { modelFailureCause } from "../util/errors.ts";
import type { Character } from "../character.ts";
import { withDeadline } from "../util/deadline.ts";
import type { TurnInput, TurnOutcome } from "../turn/turn-types.ts";
import type { Clock, EventSink } from "../ports/events.ts";
import type { MemoryStore } from "../ports/memory.ts";
import type { ChatModel } from "../ports/model.ts";
import type { MemoryRetriever } from "../ports/retrieval.ts";

export interface EvaluatorContext {
  character: Character;
  input: TurnInput;
  outcome: TurnOutcome;
  memory: MemoryStore;
  clock: Clock;
  /** The small model for side tasks; null when no model is configured. */
  model: { client: ChatModel; name: string } | null;
  retriever: MemoryRetriever | null;
  /** The user's interaction count after this turn (set by the interaction evaluator, which runs first). */
  interactions: number | null;
}

export interface Evaluator {
  name: string;
  /** Runs before the others, which may read what it sets on the context. */
  first?: boolean;
  /** Whether it applies to this turn (e.g. only when the agent replied). */
  shouldRun(context: EvaluatorContext): boolean;
  run(context: EvaluatorContext): Promise<void>;
}

/**
 * Runs the interaction evaluator first (the others read its count), alongside `stored` (the
 * reply's own writes, which the `first` ones do not read), then the rest concurrently once both
 * are done. A rejected `stored` rejects this, and the rest do not run.
 */
export async function runEvaluators(
  evaluators: Evaluator[],
  context: EvaluatorContext,
  options: { timeoutMs: number; events: EventSink; stored?: Promise<unknown> },
): Promise<void> {
  const first = evaluators.filter((evaluator) => evaluator.first);
  const rest = evaluators.filter((evaluator) => !evaluator.first);
  await Promise.all([options.stored, runConcurrently(first, context, options)]);
  await runConcurrently(rest, context, options);
}

async function runConcurrently(
  evaluators: Evaluator[],
  context: EvaluatorContext,
  options: { timeoutMs: number; events: EventSink },
): Promise<void> {
  await Promise.all(
    evaluators
      .filter((evaluator) => evaluator.shouldRun(context))
      .map(async (evaluator) => {
        try {
          await withDeadline(evaluator.run(context), options.timeoutMs);
        } catch (error) {
          options.events.emit({
            type: "evaluator_failed",
            turnId: context.input.turnId,
            agentId: context.input.agentId,
            roomId: context.input.roomId,
            at: context.clock.now(),
            evaluator: evaluator.name,
            reason: error instanceof Error ? error.message : String(error),
            cause: modelFailureCause(error),
          });
        }
      }),
  );
}

/** Keeps the relationships table current: how often and how recently each person talked to the agent. */
export const interactionEvaluator: Evaluator = {
  name: "interaction",
  first: true,
  shouldRun: ({ outcome }) => outcome.status === "replied",
  async run(context) {
    const { input, memory, clock } = context;
    context.interactions = await memory.recordInteraction({
      agentId: input.agentId,
      userId: input.userId,
      turnId: input.turnId,
      at: clock.now(),
    });
  },
};
