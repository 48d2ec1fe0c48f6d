// Asks a model for JSON and trusts nothing it says: the reply is extracted (bare, or inside a code
// fence), parsed and validated with zod; an invalid reply is re-asked once with the exact problem
// before giving up with a typed error. Used by side tasks (fact extraction, summaries).
import type { z } from "zod";
import { ModelCallError } from "../util/errors.ts";
import type { ChatMessage, ChatModel, TokenUsage } from "../ports/model.ts";

/**
 * The model answered, but its JSON stayed invalid after the re-asks (as opposed to a call that
 * failed): callers that can go on without the reply (the task spec) tell the two apart by class.
 */
export class InvalidStructuredReplyError extends ModelCallError {
  readonly problem: string;

  constructor(model: string, problem: string) {
    super({
      model,
      message: `the model's structured reply stayed invalid: ${problem}`,
      failover: false,
      cause: "invalid_reply",
    });
    this.problem = problem;
  }
}

export interface StructuredRequest<T extends z.ZodType> {
  model: ChatModel;
  modelName: string;
  messages: ChatMessage[];
  schema: T;
  maxOutputTokens?: number;
  signal?: AbortSignal;
  /** Attempts in all, including the first (default 2: one re-ask). */
  attempts?: number;
  /** The prompt cache's scope (ChatRequest.cacheScope); absent: none sent. */
  cacheScope?: string;
}

export interface StructuredResult<T> {
  value: T;
  usage: TokenUsage;
  calls: number;
}

export async function completeStructured<T extends z.ZodType>(
  request: StructuredRequest<T>,
): Promise<StructuredResult<z.infer<T>>> {
  const messages = [...request.messages];
  const usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  const attempts = request.attempts ?? 2;
  let problem = "";
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const response = await request.model.complete({
      model: request.modelName,
      messages,
      temperature: 0,
      maxOutputTokens: request.maxOutputTokens,
      signal: request.signal,
      ...(request.cacheScope ? { cacheScope: request.cacheScope } : {}),
    });
    usage.promptTokens += response.usage.promptTokens;
    usage.completionTokens += response.usage.completionTokens;
    const text = response.text ?? "";
    const parsed = parseJson(text);
    if (parsed.ok) {
      const checked = request.schema.safeParse(parsed.value);
      if (checked.success) return { value: checked.data, usage, calls: attempt };
      problem = checked.error.issues
        .slice(0, 5)
        .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
        .join("; ");
    } else {
      problem = "the reply was not valid JSON";
    }
    messages.push(
      { role: "assistant", content: text },
      {
        role: "user",
        content: `That reply is invalid (${problem}). Reply again with only the corrected JSON.`,
      },
    );
  }
  throw new InvalidStructuredReplyError(request.modelName, problem);
}

/** The JSON value in a reply: the whole text, a fenced block, or the outermost {...}. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  const candidates = [text.trim()];
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(text);
  if (fenced?.[1]) candidates.push(fenced[1].trim());
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start >= 0 && end > start) candidates.push(text.slice(start, end + 1));
  for (const candidate of candidates) {
    try {
      return { ok: true, value: JSON.parse(candidate) };
    } catch {
      // try the next form
    }
  }
  return { ok: false };
}
