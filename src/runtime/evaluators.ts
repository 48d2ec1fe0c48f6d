// Evaluators run after the reply has gone out, so they never delay it. Each is time-bounded and
// isolated: one failing is reported as an event and does not stop the others or fail the turn.
// They must be idempotent, since an evicted turn re-runs its evaluation phase.
import type { Character } from "./character.ts";
import { withDeadline } from "./deadline.ts";
import type { TurnInput, TurnOutcome } from "./turn-types.ts";
import type { Clock, EventSink, MemoryStore } from "./types.ts";

export interface EvaluatorContext {
  character: Character;
  input: TurnInput;
  outcome: TurnOutcome;
  memory: MemoryStore;
  clock: Clock;
}

export interface Evaluator {
  name: string;
  /** Whether it applies to this turn (e.g. only when the agent replied). */
  shouldRun(context: EvaluatorContext): boolean;
  run(context: EvaluatorContext): Promise<void>;
}

export async function runEvaluators(
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
          });
        }
      }),
  );
}

/** Keeps the relationships table current: how often and how recently each person talked to the agent. */
export const interactionEvaluator: Evaluator = {
  name: "interaction",
  shouldRun: ({ outcome }) => outcome.status === "replied",
  async run({ input, memory, clock }) {
    await memory.recordInteraction({ agentId: input.agentId, userId: input.userId, turnId: input.turnId, at: clock.now() });
  },
};
