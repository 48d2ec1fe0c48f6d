// Translation between the runtime's chat vocabulary (src/runtime/ports/model.ts) and the OpenAI Chat
// Completions wire format, in both directions. Shared by the OpenAI client and the Workers AI
// adapter (whose newer models answer in the same shape). Responses are untrusted: zod-checked.

import { z } from "zod";
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import type { ChatMessage, ChatResponse, ToolCall, ToolSpec } from "../runtime/ports/model.ts";

/**
 * `images: false` for models that cannot see: a user message's images become a note in its text
 * instead of image parts the model would reject.
 */
export function toOpenAIMessages(
  messages: ChatMessage[],
  options: { images?: boolean } = {},
): ChatCompletionMessageParam[] {
  const images = options.images !== false;
  return messages.map((message): ChatCompletionMessageParam => {
    switch (message.role) {
      case "system":
        return { role: "system", content: message.content };
      case "user": {
        const name = message.name === undefined ? {} : { name: message.name };
        const attached = message.images ?? [];
        if (attached.length === 0) return { role: "user", content: message.content, ...name };
        if (!images) {
          const note = `\n\n[${attached.length} image${attached.length === 1 ? " was" : "s were"} attached, but this model cannot see images]`;
          return { role: "user", content: message.content + note, ...name };
        }
        return {
          role: "user",
          content: [
            { type: "text", text: message.content },
            ...attached.map((url) => ({ type: "image_url" as const, image_url: { url } })),
          ],
          ...name,
        };
      }
      case "assistant":
        // OpenAI rejects `tool_calls: []`, so the key is left out when there are none.
        return message.toolCalls && message.toolCalls.length > 0
          ? {
              role: "assistant",
              content: message.content,
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: "function" as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : { role: "assistant", content: message.content };
      case "tool":
        return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
      default:
        return unknownRole(message);
    }
  });
}

/** Every role is mapped above; a new one is a compile error here before it is a runtime one. */
function unknownRole(message: never): never {
  throw new Error(
    `no OpenAI mapping for a chat message with role ${JSON.stringify((message as { role?: unknown }).role)}`,
  );
}

/** Undefined for no tools: OpenAI rejects an empty `tools` array. */
export function toOpenAITools(
  tools: ToolSpec[] | undefined,
): ChatCompletionFunctionTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((tool) => ({
    type: "function" as const,
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** Tool arguments stay raw text for the tool loop; some compatible servers send an object instead. */
export function toRawArguments(value: unknown): string {
  if (value === undefined || value === null) return "{}";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** Ids are synthesized (`call_<index>`) when a server omits them, so tool results can refer back. */
export function toToolCalls(
  calls: { id?: string | undefined; name: string; arguments?: unknown }[],
): ToolCall[] {
  return calls.map((call, index) => ({
    id: call.id ?? `call_${index}`,
    name: call.name,
    arguments: toRawArguments(call.arguments),
  }));
}

const wireArguments = z.union([z.string(), z.record(z.string(), z.unknown())]).nullish();

const WireToolCall = z.object({
  id: z.string().min(1).optional(),
  // We only ever offer function tools, so anything else ("custom") is not a usable answer.
  type: z.literal("function").optional(),
  function: z.object({ name: z.string().min(1), arguments: wireArguments }),
});

const WireChoice = z.object({
  message: z.object({
    content: z.string().nullish(),
    refusal: z.string().nullish(),
    tool_calls: z.array(WireToolCall).nullish(),
  }),
  finish_reason: z.string().nullish(),
});

export const WireUsage = z
  .object({
    prompt_tokens: z.number().int().nonnegative().nullish(),
    completion_tokens: z.number().int().nonnegative().nullish(),
    // OpenAI's prompt cache: the part of prompt_tokens read from it (absent on most other servers).
    prompt_tokens_details: z
      .object({ cached_tokens: z.number().int().nonnegative().nullish() })
      .nullish(),
  })
  .nullish();

export const WireCompletion = z.object({
  model: z.string().min(1).optional(),
  choices: z.array(WireChoice).min(1),
  usage: WireUsage,
});

export type ParsedOutput = { ok: true; response: ChatResponse } | { ok: false; problem: string };

/** Validates an OpenAI-shaped completion; `requestedModel` stands in when the body names none. */
export function parseOpenAICompletion(body: unknown, requestedModel: string): ParsedOutput {
  const parsed = WireCompletion.safeParse(body);
  if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error) };
  const completion = parsed.data;
  // Only the first choice matters: we never ask for n > 1.
  const choice = completion.choices[0];
  if (!choice) return { ok: false, problem: "choices: empty" };
  const toolCalls = toToolCalls(
    (choice.message.tool_calls ?? []).map((call) => ({
      id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
    })),
  );
  return {
    ok: true,
    response: {
      model: completion.model ?? requestedModel,
      // A refusal is still something to show the user, rather than an empty reply.
      text: choice.message.content ?? choice.message.refusal ?? null,
      toolCalls,
      usage: toTokenUsage(completion.usage),
      finishReason: choice.finish_reason ?? null,
    },
  };
}

/** Cached prompt tokens only when the server reported them; never more than the prompt itself. */
export function toTokenUsage(usage: z.infer<typeof WireUsage>): ChatResponse["usage"] {
  const promptTokens = usage?.prompt_tokens ?? 0;
  const cached = usage?.prompt_tokens_details?.cached_tokens;
  return {
    promptTokens,
    completionTokens: usage?.completion_tokens ?? 0,
    ...(cached === undefined || cached === null
      ? {}
      : { cachedPromptTokens: Math.min(cached, promptTokens) }),
  };
}

/** A short, value-free summary of what was wrong (zod messages never quote the input). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(body)"}: ${issue.message}`)
    .join("; ");
}
