// Assembles a streamed Chat Completion (`stream: true`) into the same ChatResponse a plain call
// returns, handing each piece of text to the caller as it arrives. Chunks are untrusted: each is
// zod-checked, and tool calls are rebuilt from their indexed fragments (OpenAI sends the id and
// name once, then the arguments in pieces).
import { z } from "zod";
import type { ChatResponse } from "../runtime/ports/model.ts";
import { describeIssues, toTokenUsage, toToolCalls, WireUsage } from "./openai-mapping.ts";

const WireToolCallDelta = z.object({
  index: z.number().int().nonnegative().max(127),
  id: z.string().min(1).nullish(),
  function: z
    .object({
      name: z.string().nullish(),
      arguments: z.string().nullish(),
    })
    .nullish(),
});

const WireChunk = z.object({
  model: z.string().min(1).optional(),
  choices: z.array(
    z.object({
      delta: z
        .object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z.array(WireToolCallDelta).nullish(),
        })
        .nullish(),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: WireUsage,
});

/** More than this in one streamed answer is refused as malformed (a runaway or hostile server). */
export const MAX_STREAMED_CHARS = 1_000_000;

export type StreamedOutput = { ok: true; response: ChatResponse } | { ok: false; problem: string };

/**
 * Reads every chunk and returns the whole answer. `onText` sees each non-empty text piece in
 * order; a malformed chunk ends the read with `ok: false` (what was already shown stays shown).
 */
export async function collectStream(
  chunks: AsyncIterable<unknown>,
  requestedModel: string,
  onText: (delta: string) => void,
): Promise<StreamedOutput> {
  let model: string | undefined;
  let text = "";
  let refusal = "";
  let finishReason: string | null = null;
  let usage: z.infer<typeof WireUsage> = null;
  let sawChoice = false;
  const calls = new Map<number, { id?: string; name: string; arguments: string }>();
  for await (const raw of chunks) {
    const parsed = WireChunk.safeParse(raw);
    if (!parsed.success)
      return { ok: false, problem: `stream chunk: ${describeIssues(parsed.error)}` };
    const chunk = parsed.data;
    model ??= chunk.model;
    if (chunk.usage) usage = chunk.usage;
    // Only the first choice matters: we never ask for n > 1.
    const choice = chunk.choices[0];
    if (!choice) continue;
    sawChoice = true;
    if (choice.finish_reason) finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (!delta) continue;
    if (delta.content) {
      text += delta.content;
      onText(delta.content);
    }
    if (delta.refusal) refusal += delta.refusal;
    for (const part of delta.tool_calls ?? []) {
      const call = calls.get(part.index) ?? { name: "", arguments: "" };
      if (part.id) call.id = part.id;
      if (part.function?.name) call.name += part.function.name;
      if (part.function?.arguments) call.arguments += part.function.arguments;
      calls.set(part.index, call);
    }
    if (
      text.length +
        refusal.length +
        [...calls.values()].reduce((n, c) => n + c.arguments.length, 0) >
      MAX_STREAMED_CHARS
    ) {
      return { ok: false, problem: `stream: more than ${MAX_STREAMED_CHARS} characters` };
    }
  }
  if (!sawChoice) return { ok: false, problem: "stream: no choices" };
  const ordered = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  const nameless = ordered.findIndex((call) => call.name.length === 0);
  if (nameless >= 0) return { ok: false, problem: `stream: tool call ${nameless} has no name` };
  return {
    ok: true,
    response: {
      model: model ?? requestedModel,
      // A refusal is still something to show the user, rather than an empty reply.
      text: text || refusal || null,
      toolCalls: toToolCalls(ordered),
      usage: toTokenUsage(usage),
      finishReason,
    },
  };
}
