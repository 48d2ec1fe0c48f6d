// Admission: what a turn settles before its model. A message the respond rules decline is stored
// and left there (no model, budget or context is needed to say no). Otherwise the query's embedding
// starts, the caller's preparation runs, and the day's budgets are read beside the context; the
// verdict, awaited before the first model request, is a result: a place's used budget is a value.
import type { Character } from "../../character.ts";
import type { TurnRetrieval } from "../../context/compose-state.ts";
import type { ChatModel } from "../../ports/model.ts";
import type { MemoryRetriever } from "../../ports/retrieval.ts";
import {
  boundedEmbedding,
  DEFAULT_EMBEDDING_BUDGET_MS,
  type BoundedEmbedding,
} from "../../retrieval/query-embedding.ts";
import { queryTerms } from "../../retrieval/query-terms.ts";
import { ModelNotConfiguredError } from "../../util/errors.ts";
import { decideByRules, type RespondDecision } from "../respond-decision.ts";
import { dailyCeiling, readDayBudgets, type PlaceBudgetUsed } from "../spend.ts";
import type { TurnRunnerDeps } from "../turn-deps.ts";
import type { RespondOptions, RuntimeLimits, TurnInput } from "../turn-types.ts";

/** Long-term memory for one turn, its query's embedding already started. */
export type TurnMemory = TurnRetrieval & { embedding: BoundedEmbedding };

export type Admission =
  | { kind: "declined" }
  | {
      kind: "admitted";
      model: ChatModel;
      /** The respond rules' verdict ("ask": the small model decides, after the context). */
      rules: RespondDecision | "ask";
      retrieval: TurnMemory | null;
      /** What the attachments add to the person's message. */
      extra: { text: string; images: string[] } | undefined;
      /**
       * The caller's own work and the day's budgets: rejects with the caller's error or the
       * agent's ceiling, resolves to the place's used budget or null.
       */
      verdict: Promise<PlaceBudgetUsed | null>;
    };

export async function admitTurn(
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  options: RespondOptions,
  now: number,
): Promise<Admission> {
  const rules = options.resume ? null : decideByRules(input, character);
  if (rules && rules !== "ask" && !rules.respond) {
    // Still the caller's own work first (the inbound write, its version check): a declined
    // message counts as handled only once it is stored.
    await options.beforeModel;
    return { kind: "declined" };
  }
  const model = deps.model;
  if (!model) throw new ModelNotConfiguredError(deps.modelNotConfiguredMessage);
  // The query's embedding is the longest wait before the model: it starts now, beside the
  // preparation below, the budget's read and the context's reads, and holds the turn at most
  // its budget. A greeting (no query terms) and a resumed turn retrieve nothing.
  const retrieval =
    deps.retriever && !options.resume
      ? turnMemory(deps.retriever, deps.limits, character, input.text)
      : null;
  if (retrieval && queryTerms(input.text).length > 0) void retrieval.queryVector();
  // What only a turn that goes on needs (its tools connected, its attachments read).
  const extra = (await options.prepare?.()) ?? options.attachments;
  // A turn resuming after an approval was admitted when it started.
  const budget =
    deps.spend && !options.resume
      ? readDayBudgets(deps.spend, {
          agentId: input.agentId,
          principal: input.principal,
          place: input.place,
          ceiling: dailyCeiling(character, deps.dailyTokenLimit ?? null),
          now,
        })
      : null;
  // The caller's verdict wins over the budget's: the ceiling comes from a character the caller
  // may find stale (its version check), and a refusal at a stale ceiling would hide that, so a
  // raised ceiling would never be read. The caller starts again on the current character.
  const verdict = Promise.allSettled([options.beforeModel, budget]).then(([own, spent]) => {
    if (own.status === "rejected") throw own.reason;
    if (spent.status === "rejected") throw spent.reason;
    return spent.value ?? null;
  });
  // Awaited before the first model request; until then a rejection is not unhandled.
  verdict.catch(() => undefined);
  // A resumed turn was answered when it started.
  return {
    kind: "admitted",
    model,
    rules: rules ?? { respond: true, reason: "resumed" },
    retrieval,
    extra,
    verdict,
  };
}

/**
 * The turn's view of long-term memory: budgets from the context size, the query embedded once and
 * waited for at most the memory settings' embedding budget.
 */
function turnMemory(
  retriever: MemoryRetriever,
  limits: RuntimeLimits,
  character: Character,
  text: string,
): TurnMemory {
  const memory = character.settings.memory;
  const embedding = boundedEmbedding(
    () => retriever.embedQuery(text),
    memory.embeddingBudgetMs ?? DEFAULT_EMBEDDING_BUDGET_MS,
  );
  return {
    retriever,
    embedding,
    queryVector: () => embedding.vector(),
    budgets: {
      facts: memory.factsTokens ?? Math.round(limits.contextTokens * 0.1),
      knowledge: memory.knowledgeTokens ?? Math.round(limits.contextTokens * 0.25),
      recall: memory.recallTokens ?? Math.round(limits.contextTokens * 0.15),
    },
    threshold: memory.threshold,
  };
}
