// Time and lifecycle events: the Clock the runtime reads, every RuntimeEvent a turn or task emits,
// and the EventSink that receives them.
import type { ModelFailureCause } from "../util/errors.ts";
import type { TokenUsage } from "./model.ts";
import type { QueryEmbeddingOutcome } from "./retrieval.ts";

export interface Clock {
  now(): number;
}

export type RuntimeEvent =
  | {
      type: "run_started";
      turnId: string;
      agentId: string;
      roomId: string;
      /** Whom the turn answers (a turn user id: `alice`, `discord:<id>`). */
      userId: string;
      /** Where it came from: "rest", "discord", ... */
      source: string;
      at: number;
    }
  | {
      type: "run_ended";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      durationMs: number;
      status: "replied" | "ignored" | "failed" | "paused";
      modelCalls: number;
      usage: TokenUsage;
    }
  | {
      type: "run_timed_out";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      limitMs: number;
    }
  | {
      type: "tool_called";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      tool: string;
      ok: boolean;
      cached: boolean;
      durationMs: number;
    }
  | {
      /** One request to a model, whether it answered or failed (a failover makes one per model). */
      type: "model_called";
      turnId: string;
      agentId: string;
      roomId: string;
      /** When it ended. */
      at: number;
      startedAt: number;
      backend: "openai" | "workers-ai";
      /** The model asked for, and the one that says it answered (null when none did). */
      model: string;
      responseModel: string | null;
      inputTokens: number;
      /** Of `inputTokens`, those read from the provider's prompt cache (0 when it did not say). */
      cachedInputTokens: number;
      outputTokens: number;
      finishReason: string | null;
      /** The error's code when the call failed; null when it answered. */
      error: string | null;
    }
  | {
      /** The prompt's context composed: providers ran, long-term memory searched. */
      type: "context_composed";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      startedAt: number;
      /** Memories in the prompt, and how many of them each search leg found (a hit may count twice). */
      memories: number;
      hits: { text: number; vector: number; neighbour: number };
      /** How the wait for the query's embedding went ("late": past its budget, text search alone). */
      queryEmbedding: QueryEmbeddingOutcome;
    }
  | {
      type: "tool_approval_requested";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      tool: string;
    }
  | {
      type: "model_failover";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      from: string;
      to: string;
      reason: string;
    }
  | {
      type: "provider_skipped";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      provider: string;
      reason: string;
    }
  | {
      type: "evaluator_failed";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      evaluator: string;
      reason: string;
      /** Why its model call failed, when that is what failed. */
      cause: ModelFailureCause | null;
    }
  | {
      type: "run_failed";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      code: string;
      reason: string;
      /** With code "model": the model that failed and why. */
      model?: { name: string; cause: ModelFailureCause };
    }
  | { type: "spend_not_recorded"; agentId: string; at: number; tokens: number; reason: string }
  | {
      /** A replied turn's record for the turn inspector could not be stored. */
      type: "inspection_not_recorded";
      turnId: string;
      agentId: string;
      roomId: string;
      at: number;
      reason: string;
    };

export interface EventSink {
  emit(event: RuntimeEvent): void;
}
