// What an OpenAI Chat Completions request means here: the last user message is the turn's text;
// earlier messages are the client's copy of the conversation and are not said again (the agent's
// own history is its memory). Client-side tools are refused: the agent's tools run on the server.
// Unknown fields (sampling settings and the like) are dropped, so nothing free-form is kept.
import { z } from "@hono/zod-openapi";
import type { Attachment } from "../../../runtime/ports/memory.ts";
import { ValidationError } from "../../../runtime/util/errors.ts";
import { AGENT_ID, ExternalId } from "../../schemas.ts";
import { MAX_ATTACHMENTS, MAX_MESSAGE_CHARS } from "../messages.ts";

export const MAX_CHAT_MESSAGES = 1_000;

const ContentPart = z.object({
  type: z.string().max(64),
  text: z.string().optional(),
  image_url: z.object({ url: z.string() }).optional(),
});

const ChatMessage = z.object({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: z.union([z.string(), z.array(ContentPart).max(100)]).nullish(),
  name: z.string().max(100).nullish(),
  // Present only to be refused by name: a conversation that ran client-side tools.
  tool_calls: z.array(z.unknown()).nullish(),
  function_call: z.unknown().optional(),
});
type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatCompletionRequest = z
  .object({
    model: z
      .string()
      .regex(AGENT_ID, "the model is an agent id (GET /v1/models lists them)")
      .openapi({ description: "An agent id", example: "ada" }),
    messages: z
      .array(ChatMessage)
      .min(1, "send at least one message")
      .max(MAX_CHAT_MESSAGES, `at most ${MAX_CHAT_MESSAGES} messages`)
      .openapi({
        description:
          "The last one must be the user's: it is the turn's text. Earlier ones are not stored (the agent remembers the room itself)",
      }),
    user: ExternalId.nullish().openapi({
      description: "Who is speaking (a token's user-prefix rules apply); default: one per token",
    }),
    metadata: z
      .record(z.string().max(64), z.string().max(512))
      .nullish()
      .openapi({ description: "`room_id` names the room (as the `X-Room-Id` header does)" }),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
    n: z.number().int().nullish(),
    // Present only to be refused by name (client-side tools, the old functions API).
    tools: z.array(z.unknown()).nullish(),
    tool_choice: z.unknown().optional(),
    functions: z.array(z.unknown()).nullish(),
    function_call: z.unknown().optional(),
  })
  .openapi("ChatCompletionRequest");
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** The turn a request asks for, read from its messages. */
export interface ChatTurn {
  text: string;
  attachments: Attachment[];
  userName?: string;
  /** The conversation's first user message: with the token and user, it names the room. */
  opening: string;
}

/** A request error naming the field, as OpenAI's `param`. */
export function invalidParam(param: string, message: string): ValidationError {
  return new ValidationError(message, { param });
}

export function readChatTurn(body: ChatCompletionRequest): ChatTurn {
  refuseClientTools(body);
  if (body.n !== undefined && body.n !== null && body.n !== 1)
    throw invalidParam("n", "n must be 1: an agent gives one reply per turn");
  const last = body.messages.at(-1);
  if (last?.role !== "user")
    throw invalidParam(
      "messages",
      `the last message must be the user's (it is the turn's text); this one is "${last?.role}"`,
    );
  const index = body.messages.length - 1;
  const { text, attachments } = partsOf(last, index);
  if (text.length === 0)
    throw invalidParam(`messages.${index}.content`, "the last user message has no text");
  if (text.length > MAX_MESSAGE_CHARS)
    throw invalidParam(
      `messages.${index}.content`,
      `the last user message is longer than ${MAX_MESSAGE_CHARS} characters`,
    );
  const first = body.messages.findIndex((message) => message.role === "user");
  const userName = last.name?.trim();
  return {
    text,
    attachments,
    ...(userName ? { userName } : {}),
    opening: textOf(body.messages[first] ?? last),
  };
}

function refuseClientTools(body: ChatCompletionRequest): void {
  const refuse = (param: string) =>
    invalidParam(
      param,
      `client-side tools are not supported (\`${param}\`): the agent's tools run on the server, so send only the conversation's messages`,
    );
  if (body.tools && body.tools.length > 0) throw refuse("tools");
  if (body.functions && body.functions.length > 0) throw refuse("functions");
  if (usesTools(body.tool_choice)) throw refuse("tool_choice");
  if (usesTools(body.function_call)) throw refuse("function_call");
  for (const [index, message] of body.messages.entries()) {
    if (message.role === "tool" || message.role === "function")
      throw refuse(`messages.${index}.role`);
    if ((message.tool_calls && message.tool_calls.length > 0) || usesTools(message.function_call))
      throw refuse(`messages.${index}.tool_calls`);
  }
}

/** `"none"` (or nothing) asks for no tool, which is what happens anyway. */
function usesTools(choice: unknown): boolean {
  return choice !== undefined && choice !== null && choice !== "none";
}

const ImageUrl = z.url({ protocol: /^https?$/ }).max(2_048);

/** A message's text parts, joined; anything else in it is left out. */
function textOf(message: ChatMessage): string {
  const content = message.content;
  if (typeof content === "string" || !content) return (content ?? "").trim();
  return content
    .flatMap((part) => (part.type === "text" ? [part.text ?? ""] : []))
    .join("\n")
    .trim();
}

/** The turn's message: its text, and its images given by http(s) URL; other parts are refused. */
function partsOf(message: ChatMessage, index: number): { text: string; attachments: Attachment[] } {
  const content = message.content;
  if (typeof content === "string" || !content) return { text: textOf(message), attachments: [] };
  const attachments: Attachment[] = [];
  for (const [at, part] of content.entries()) {
    const where = `messages.${index}.content.${at}`;
    if (part.type === "text") continue;
    if (part.type === "image_url" && part.image_url) {
      const url = ImageUrl.safeParse(part.image_url.url);
      if (!url.success)
        throw invalidParam(
          where,
          "send images as http(s) URLs the agent can fetch (data: URLs are not accepted)",
        );
      attachments.push({ url: url.data });
    } else
      throw invalidParam(
        where,
        `content parts of type "${part.type}" are not supported (text and image_url are)`,
      );
  }
  if (attachments.length > MAX_ATTACHMENTS)
    throw invalidParam(
      `messages.${index}.content`,
      `at most ${MAX_ATTACHMENTS} images per message`,
    );
  return { text: textOf(message), attachments };
}
