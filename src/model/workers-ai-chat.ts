// ChatModel over the Workers AI binding (`env.AI.run`). Models answer in one of two shapes, the
// classic `{response, tool_calls}` or the OpenAI-compatible `{choices}`; both are zod-checked.
// The binding has no status codes, so any failure after one retry means "try another model".

import { z } from "zod";
import { untilAborted } from "../runtime/util/deadline.ts";
import { ModelCallError } from "../runtime/util/errors.ts";
import type { ChatModel, ChatRequest, ChatResponse } from "../runtime/ports/model.ts";
import {
  WireUsage,
  describeIssues,
  parseOpenAICompletion,
  toOpenAIMessages,
  toOpenAITools,
  toTokenUsage,
  toToolCalls,
  type ParsedOutput,
} from "./openai-mapping.ts";

/** The one method we use of the AI binding; `env.AI` satisfies it. */
export interface WorkersAIBinding {
  run(model: string, inputs: Record<string, unknown>): Promise<unknown>;
}

export interface WorkersAIChatModelOptions {
  ai: WorkersAIBinding;
}

/** The first try plus one retry: the binding already retries internally, more rarely helps. */
const WORKERS_AI_ATTEMPTS = 2;
const MAX_ERROR_DETAIL_CHARS = 200;

const rawArguments = z.union([z.string(), z.record(z.string(), z.unknown())]).nullish();

// Older models put name/arguments at the top level; newer ones nest them OpenAI-style.
const ClassicToolCall = z.union([
  z.object({ id: z.string().min(1).optional(), name: z.string().min(1), arguments: rawArguments }),
  z.object({
    id: z.string().min(1).optional(),
    type: z.literal("function").optional(),
    function: z.object({ name: z.string().min(1), arguments: rawArguments }),
  }),
]);

const ClassicOutput = z
  .object({
    response: z.string().nullish(),
    tool_calls: z.array(ClassicToolCall).nullish(),
    usage: WireUsage,
  })
  .refine((output) => output.response != null || output.tool_calls != null, {
    message: "neither response nor tool_calls",
  });

export function createWorkersAIChatModel(options: WorkersAIChatModelOptions): ChatModel {
  return {
    backend: "workers-ai",
    async complete(request) {
      const response = await complete(options.ai, request);
      // Not streamed from Workers AI: a streaming caller gets the whole text as one piece.
      if (request.onText && response.text) request.onText(response.text);
      return response;
    },
  };
}

async function complete(ai: WorkersAIBinding, request: ChatRequest): Promise<ChatResponse> {
  const inputs = toInputs(request);
  let problem = "";
  for (let attempt = 1; attempt <= WORKERS_AI_ATTEMPTS; attempt++) {
    request.signal?.throwIfAborted();
    let output: unknown;
    try {
      output = await runAbortably(ai, request.model, inputs, request.signal);
    } catch (error) {
      if (request.signal?.aborted) throw request.signal.reason;
      problem = `Workers AI error: ${truncate(error instanceof Error ? error.message : String(error))}`;
      continue;
    }
    const parsed = parseWorkersAIOutput(output, request.model);
    if (parsed.ok) return parsed.response;
    problem = `malformed output: ${parsed.problem}`;
  }
  throw new ModelCallError({
    model: request.model,
    message: `model ${request.model}: ${problem} after ${WORKERS_AI_ATTEMPTS} attempts`,
    failover: true,
  });
}

function toInputs(request: ChatRequest): Record<string, unknown> {
  const inputs: Record<string, unknown> = {
    messages: toOpenAIMessages(request.messages, { images: false }),
  };
  const tools = toOpenAITools(request.tools);
  if (tools) inputs.tools = tools;
  if (request.temperature !== undefined) inputs.temperature = request.temperature;
  if (request.maxOutputTokens !== undefined) inputs.max_tokens = request.maxOutputTokens;
  return inputs;
}

export function parseWorkersAIOutput(output: unknown, model: string): ParsedOutput {
  if (typeof output === "object" && output !== null && "choices" in output) {
    return parseOpenAICompletion(output, model);
  }
  const parsed = ClassicOutput.safeParse(output);
  if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error) };
  const calls = (parsed.data.tool_calls ?? []).map((call) =>
    "function" in call
      ? { id: call.id, name: call.function.name, arguments: call.function.arguments }
      : { id: call.id, name: call.name, arguments: call.arguments },
  );
  return {
    ok: true,
    response: {
      model,
      text: parsed.data.response ?? null,
      toolCalls: toToolCalls(calls),
      usage: toTokenUsage(parsed.data.usage),
      // The classic shape does not say why the model stopped.
      finishReason: null,
    },
  };
}

/** `ai.run` takes no signal; we stop waiting on abort (the inference itself runs to its end). */
export function runAbortably(
  ai: WorkersAIBinding,
  model: string,
  inputs: Record<string, unknown>,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  return signal ? untilAborted(ai.run(model, inputs), signal) : ai.run(model, inputs);
}

export function truncate(text: string): string {
  return text.length > MAX_ERROR_DETAIL_CHARS ? `${text.slice(0, MAX_ERROR_DETAIL_CHARS)}…` : text;
}
