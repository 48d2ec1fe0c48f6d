// The model side of one turn: calls the current model and, when it fails in a way another model
// could fix, moves to the next of MODEL_FALLBACKS. A new model never inherits the previous one's
// half-finished tool chain: the transcript is cut back to the people's messages plus a note, and the
// turn's tool cache is dropped by the caller, so tool state is re-checked.
import { ModelCallError } from "../util/errors.ts";
import type { EventSink } from "../ports/events.ts";
import type {
  ChatMessage,
  ChatModel,
  ChatRequest,
  ChatResponse,
  ModelChoice,
  TokenUsage,
} from "../ports/model.ts";

export const FAILOVER_NOTE =
  "Note: a different model started on this request and its tool calls were discarded. " +
  "Any tool state may have changed: call the tools again before relying on their results.";

export interface ModelSessionOptions {
  model: ChatModel;
  choice: ModelChoice;
  events: EventSink;
  now: () => number;
  ids: { turnId: string; agentId: string; roomId: string };
  /**
   * Asked before every model call, failover included (a task checks its place's budgets here):
   * it throws to refuse, and a refused call is neither made nor counted.
   */
  admit?: () => Promise<void>;
  /** Carry on a paused turn: its place in the fallback list and the usage so far. */
  resume?: { position: number; usage: TokenUsage & { modelCalls: number } };
  /**
   * Told each call's messages and answer, before its `model_called` event, for a tracer that was
   * asked to record message content (events themselves never carry text). Absent: nobody is.
   */
  observe?: (call: ObservedModelCall) => void;
  /** The prompt cache's scope (ChatRequest.cacheScope); absent: the agent and the room. */
  cacheScope?: string;
}

/** A model call with its content, for `observe`. */
export interface ObservedModelCall {
  turnId: string;
  messages: ChatMessage[];
  response: ChatResponse | null;
}

export class ModelSession {
  private index = 0;
  /** `cachedPromptTokens` appears once a provider reports it: absent means nobody said. */
  readonly usage: TokenUsage & { modelCalls: number } = {
    promptTokens: 0,
    completionTokens: 0,
    modelCalls: 0,
  };
  private readonly candidates: string[];

  private readonly options: ModelSessionOptions;

  constructor(options: ModelSessionOptions) {
    this.options = options;
    this.candidates = [
      options.choice.primary,
      ...options.choice.fallbacks.filter((m) => m !== options.choice.primary),
    ];
    if (options.resume) {
      this.index = Math.min(Math.max(0, options.resume.position), this.candidates.length - 1);
      Object.assign(this.usage, options.resume.usage);
    }
  }

  /** Which of the candidate models is current (0 = the primary). */
  get position(): number {
    return this.index;
  }

  get current(): string {
    return this.candidates[this.index] ?? this.options.choice.primary;
  }

  /**
   * One completion. `onFailover` is told when the model changed, and must return the transcript
   * to use from now on (the caller owns the transcript and the tool cache).
   */
  async complete(
    request: Omit<ChatRequest, "model">,
    onFailover: (from: string, to: string) => ChatMessage[],
  ): Promise<ChatResponse> {
    let messages = request.messages;
    for (;;) {
      const model = this.current;
      await this.options.admit?.();
      this.usage.modelCalls += 1;
      const startedAt = this.options.now();
      try {
        const response = await this.options.model.complete({
          cacheScope:
            this.options.cacheScope ?? `${this.options.ids.agentId}:${this.options.ids.roomId}`,
          ...request,
          messages,
          model,
        });
        this.usage.promptTokens += response.usage.promptTokens;
        this.usage.completionTokens += response.usage.completionTokens;
        const cached = response.usage.cachedPromptTokens;
        if (cached !== undefined)
          this.usage.cachedPromptTokens = (this.usage.cachedPromptTokens ?? 0) + cached;
        this.called(model, startedAt, messages, response, null);
        return response;
      } catch (error) {
        this.called(model, startedAt, messages, null, error);
        const next = this.candidates[this.index + 1];
        if (
          !(error instanceof ModelCallError) ||
          !error.failover ||
          next === undefined ||
          request.signal?.aborted
        )
          throw error;
        this.index += 1;
        this.options.events.emit({
          type: "model_failover",
          ...this.options.ids,
          at: this.options.now(),
          from: model,
          to: next,
          reason: error.message,
        });
        messages = onFailover(model, next);
      }
    }
  }

  /** The call's `model_called` event (and its content, for an observer that asked for it). */
  private called(
    model: string,
    startedAt: number,
    messages: ChatMessage[],
    response: ChatResponse | null,
    error: unknown,
  ): void {
    const { ids, events, now, observe } = this.options;
    observe?.({ turnId: ids.turnId, messages, response });
    events.emit({
      type: "model_called",
      ...ids,
      at: now(),
      startedAt,
      backend: this.options.model.backend,
      model,
      responseModel: response?.model ?? null,
      inputTokens: response?.usage.promptTokens ?? 0,
      cachedInputTokens: response?.usage.cachedPromptTokens ?? 0,
      outputTokens: response?.usage.completionTokens ?? 0,
      finishReason: response?.finishReason ?? null,
      error: response ? null : error instanceof ModelCallError ? error.code : "internal",
    });
  }
}

/**
 * The transcript a fallback model starts from: the system prompt, the conversation before this
 * turn, and the people's messages of this turn. Assistant tool calls and tool results of this
 * turn are dropped; if any were, a note says that tool state must be re-checked.
 */
export function transcriptForFallback(messages: ChatMessage[], turnStart: number): ChatMessage[] {
  const before = messages.slice(0, turnStart);
  const thisTurn = messages.slice(turnStart);
  const people = thisTurn.filter((message) => message.role === "user");
  const dropped = thisTurn.length - people.length;
  if (dropped === 0) return messages;
  return [...before, ...people, { role: "system", content: FAILOVER_NOTE }];
}
