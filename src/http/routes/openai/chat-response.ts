// A finished turn as OpenAI's `chat.completion`, and a streamed turn as `chat.completion.chunk`
// server-sent events: the role first, the text as the model writes it, a last chunk with its
// `finish_reason`, the usage (when `stream_options.include_usage` asks), then `data: [DONE]`.
// The room's own events (src/objects/conversation/turn-stream.ts) are read and re-said here;
// tool calls run on the server and are not shown, memories are never sent on this surface.
import { TURN_OUTCOME_EVENT } from "../../../objects/conversation/room-types.ts";
import type { TurnOutcome } from "../../../runtime/turn/turn-types.ts";
import { openAIErrorBody } from "./openai-errors.ts";

export interface CompletionMeta {
  /** The agent id, which clients know as the model. */
  model: string;
  /** Unix seconds. */
  created: number;
}

/** OpenAI's own shape; the cached part only when the model behind the agent reported one. */
function usageOf(outcome: TurnOutcome) {
  const { promptTokens, completionTokens, cachedPromptTokens } = outcome.usage;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(cachedPromptTokens === undefined
      ? {}
      : { prompt_tokens_details: { cached_tokens: cachedPromptTokens } }),
  };
}

/** The turn id names the completion, so a replayed retry has the first answer's id. */
export function completionId(turnId: string): string {
  return `chatcmpl-${turnId}`;
}

export function completionBody(outcome: TurnOutcome, meta: CompletionMeta) {
  return {
    id: completionId(outcome.turnId),
    object: "chat.completion" as const,
    created: meta.created,
    model: meta.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant" as const, content: outcome.reply?.text ?? "", refusal: null },
        logprobs: null,
        finish_reason: "stop" as const,
      },
    ],
    usage: usageOf(outcome),
  };
}

interface RoomEvent {
  event: string;
  data: string;
}

/**
 * The room's turn stream as OpenAI chunks. Text is passed on as it comes; text the model wrote
 * before calling a tool stays (the next round starts a new paragraph), and when the reply is not
 * what was streamed (a canned answer after too many steps, a retried attempt) the rest is added.
 * A turn that fails after the stream began ends with an `{"error":…}` chunk, which the SDKs
 * raise as an APIError; a stream cut short (the room restarted) says so the same way.
 */
export function completionStream(
  room: ReadableStream<Uint8Array>,
  meta: CompletionMeta & { includeUsage: boolean },
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let pending = "";
  let id: string | null = null;
  let shown = "";
  let round = "";
  let paragraph = false;
  let finished = false;

  return room.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(bytes, controller) {
        pending += decoder.decode(bytes, { stream: true });
        for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          handle(parseEvent(block), controller);
        }
      },
      flush(controller) {
        if (finished) return;
        send(controller, {
          error: openAIErrorBody(
            503,
            "upstream",
            "the room restarted while answering; send the same request again to get the reply",
          ),
        });
      },
    }),
  );

  function handle(
    event: RoomEvent | null,
    controller: TransformStreamDefaultController<Uint8Array>,
  ) {
    if (finished) return;
    if (!event) {
      // A comment (keep-alive): keeps proxies from closing a quiet stream; SDKs skip it.
      controller.enqueue(encoder.encode(": keep-alive\n\n"));
      return;
    }
    switch (event.event) {
      case "turn": {
        id = completionId((JSON.parse(event.data) as { turnId: string }).turnId);
        chunk(controller, { role: "assistant", content: "" }, null);
        return;
      }
      case "delta": {
        const { text } = JSON.parse(event.data) as { text: string };
        write(controller, text);
        return;
      }
      case "tool_call": {
        round = "";
        paragraph = shown.trim().length > 0;
        return;
      }
      case TURN_OUTCOME_EVENT: {
        const outcome = JSON.parse(event.data) as TurnOutcome;
        id ??= completionId(outcome.turnId);
        const reply = outcome.reply?.text ?? "";
        const streamed = round.trim();
        if (reply.startsWith(streamed)) write(controller, reply.slice(streamed.length));
        else {
          paragraph = shown.trim().length > 0;
          write(controller, reply);
        }
        chunk(controller, {}, "stop");
        if (meta.includeUsage)
          send(controller, { ...head(), choices: [], usage: usageOf(outcome) });
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        finished = true;
        return;
      }
      case "error": {
        const { error } = JSON.parse(event.data) as { error: { code: string; message: string } };
        send(controller, { error: openAIErrorBody(500, error.code, error.message) });
        finished = true;
        return;
      }
      default:
        // memories (never asked for here), tool_result: the tools' work is the server's.
        return;
    }
  }

  function write(controller: TransformStreamDefaultController<Uint8Array>, text: string) {
    if (text.length === 0) return;
    const content = paragraph ? `\n\n${text}` : text;
    paragraph = false;
    shown += content;
    round += text;
    chunk(controller, { content }, null);
  }

  function head() {
    return {
      id: id ?? completionId("unknown"),
      object: "chat.completion.chunk",
      created: meta.created,
      model: meta.model,
    };
  }

  function chunk(
    controller: TransformStreamDefaultController<Uint8Array>,
    delta: { role?: "assistant"; content?: string },
    finishReason: "stop" | null,
  ) {
    send(controller, {
      ...head(),
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    });
  }

  function send(controller: TransformStreamDefaultController<Uint8Array>, data: unknown) {
    controller.enqueue(encoder.encode(`data: ${JSON.stringify(data)}\n\n`));
  }
}

/** One event of the room's stream; null for a comment line. */
function parseEvent(block: string): RoomEvent | null {
  let event = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data.push(line.slice(6));
  }
  return data.length > 0 ? { event, data: data.join("\n") } : null;
}
