// The turn's wait for its query's embedding, bounded. An embedding API answers in 50-400 ms and
// the model cannot be asked before retrieval is done, so an unbounded wait adds all of it to
// every turn that retrieves. The embedding starts once, as soon as the turn knows it will
// retrieve, and the turn waits for it at most `budgetMs` (from that start): past it, the turn
// goes on with the full-text leg alone and the embedding counts as late. A late embedding still
// finishes, so a retriever that keeps recent query vectors has it for the same text next time.

/** How long a turn waits for its query's embedding by default (settings.memory.embeddingBudgetMs). */
export const DEFAULT_EMBEDDING_BUDGET_MS = 200;

import type { QueryEmbeddingOutcome } from "../ports/retrieval.ts";

export interface BoundedEmbedding {
  /** Starts the embedding (once) and resolves with its vector, or null at the budget. */
  vector(): Promise<Float32Array | null>;
  outcome(): QueryEmbeddingOutcome;
}

export function boundedEmbedding(
  embed: () => Promise<Float32Array | null>,
  budgetMs: number,
): BoundedEmbedding {
  let outcome: QueryEmbeddingOutcome = "none";
  let waited: Promise<Float32Array | null> | undefined;
  return {
    vector() {
      waited ??= new Promise<Float32Array | null>((resolve) => {
        const timer = setTimeout(() => {
          outcome = "late";
          resolve(null);
        }, budgetMs);
        embed().then(
          (vector) => {
            clearTimeout(timer);
            if (outcome === "late") return;
            outcome = vector ? "embedded" : "none";
            resolve(vector);
          },
          // Embedders report their own failures (hybrid search logs and answers null); this one
          // only keeps a rejection from holding the turn.
          () => {
            clearTimeout(timer);
            resolve(null);
          },
        );
      });
      return waited;
    },
    outcome: () => outcome,
  };
}
