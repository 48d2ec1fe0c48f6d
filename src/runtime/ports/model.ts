// What the runtime asks of a chat model: messages, tool calls and specs, the request and the
// response with its token usage, and the ChatModel interface (src/model/ implements it).

export interface ToolCall {
  id: string;
  name: string;
  /** Raw JSON text as the model produced it; parsed and validated by the tool loop. */
  arguments: string;
}

export type ChatMessage =
  | { role: "system"; content: string }
  | {
      role: "user";
      content: string;
      name?: string /** Image URLs (https or data:) the model should look at. */;
      images?: string[];
    }
  | { role: "assistant"; content: string | null; toolCalls?: ToolCall[] }
  | { role: "tool"; toolCallId: string; content: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  temperature?: number;
  maxOutputTokens?: number;
  signal?: AbortSignal;
  /**
   * Stream the answer: called with each piece of text as the model writes it. The response is
   * the same as without it. A retried attempt streams again from the start (the final
   * ChatResponse is what counts).
   */
  onText?: (delta: string) => void;
  /**
   * Which conversation the prompt continues (`agent:room`, `agent:task:id`, `agent` for side
   * calls): requests with the same scope share a prefix the provider can cache. The client sends
   * only a hash of it (OpenAI's `prompt_cache_key`), never the ids themselves.
   */
  cacheScope?: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /**
   * Of `promptTokens`, those the provider read from its prompt cache (OpenAI's
   * `usage.prompt_tokens_details.cached_tokens`). Absent: the provider did not say (read as 0).
   */
  cachedPromptTokens?: number;
}

export interface ChatResponse {
  model: string;
  text: string | null;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  finishReason: string | null;
}

/**
 * One chat completion against one named model, with the client's own retries already applied.
 * Throws `ModelCallError` (see errors.ts) when the call finally fails.
 */
export interface ChatModel {
  readonly backend: "openai" | "workers-ai";
  complete(request: ChatRequest): Promise<ChatResponse>;
}

/** The models a turn may use: primary first, then failover candidates in order. */
export interface ModelChoice {
  primary: string;
  fallbacks: string[];
  small: string;
}
