// What the bot reads from Slack, validated with zod after the signature check: the Events API
// envelope (url_verification | event_callback) with the `app_mention` and `message` events, the
// interactivity form (`payload` = a block_actions JSON) and the slash command form. Unknown fields
// pass (Slack adds fields); other envelope, event and payload types are reported as unsupported, not
// as errors. A failure names the path and never echoes the value.
import { z } from "zod";

/** Slack's longest message text (chat.postMessage truncates past 40,000); a little slack for edits. */
const MAX_TEXT_CHARS = 45_000;
const MAX_FILES = 50;

/** Users (U…, W…), channels (C…, G…, D…), teams (T…), bots (B…), apps (A…), enterprises (E…). */
const SlackId = z.string().regex(/^[A-Z0-9]{2,32}$/, "expected a Slack id");
/** A message timestamp, which is also the message's id in its channel: `1712345678.123456`. */
const Ts = z.string().regex(/^\d{1,12}\.\d{1,9}$/, "expected a Slack message ts");
const Text = z.string().max(MAX_TEXT_CHARS);
const TypeName = z.string().regex(/^[a-z0-9_.]{1,64}$/, "expected a Slack type name");

const SlackFile = z.object({
  id: z.string().regex(/^F[A-Z0-9]{1,32}$/, "expected a Slack file id"),
  name: z.string().max(1_024).nullish(),
  title: z.string().max(1_024).nullish(),
  mimetype: z.string().max(255).optional(),
  filetype: z.string().max(64).optional(),
  size: z.number().int().nonnegative().optional(),
  url_private: z.url().max(2_048).optional(),
  url_private_download: z.url().max(2_048).optional(),
});
export type SlackFile = z.infer<typeof SlackFile>;
const Files = z.array(SlackFile).max(MAX_FILES);

const Edited = z.object({ user: SlackId.optional(), ts: Ts });

export const AppMentionEvent = z.object({
  type: z.literal("app_mention"),
  user: SlackId,
  text: Text,
  ts: Ts,
  channel: SlackId,
  thread_ts: Ts.optional(),
  event_ts: Ts,
  bot_id: SlackId.optional(),
  files: Files.optional(),
});
export type AppMentionEvent = z.infer<typeof AppMentionEvent>;

/** The message inside a `message_changed` (as it is now) or `message_deleted` (as it was). */
const InnerMessage = z.object({
  ts: Ts,
  text: Text.optional(),
  user: SlackId.optional(),
  bot_id: SlackId.optional(),
  thread_ts: Ts.optional(),
  edited: Edited.optional(),
  subtype: TypeName.optional(),
});

export const MessageEvent = z.object({
  type: z.literal("message"),
  channel: SlackId,
  channel_type: z.enum(["im", "channel", "group", "mpim"]),
  user: SlackId.optional(),
  text: Text.optional(),
  ts: Ts,
  thread_ts: Ts.optional(),
  event_ts: Ts.optional(),
  bot_id: SlackId.optional(),
  /** Absent for an ordinary message; `bot_message`, `message_changed`, `file_share`, … */
  subtype: TypeName.optional(),
  files: Files.optional(),
  edited: Edited.optional(),
  /** `message_changed`: the message as it is now. */
  message: InnerMessage.optional(),
  /** `message_changed` / `message_deleted`: the message as it was. */
  previous_message: InnerMessage.optional(),
  /** `message_deleted`: the ts of the message that was deleted. */
  deleted_ts: Ts.optional(),
});
export type MessageEvent = z.infer<typeof MessageEvent>;

/** An inner event type we do not handle (reaction_added, member_joined_channel, …). */
export interface UnsupportedEvent {
  type: "unsupported";
  eventType: string;
}
export type SlackEvent = AppMentionEvent | MessageEvent | UnsupportedEvent;

const UrlVerification = z.object({
  type: z.literal("url_verification"),
  challenge: z.string().min(1).max(256),
  /** The deprecated verification token: read, never trusted (the signature is the check). */
  token: z.string().max(256).optional(),
});
export type UrlVerification = z.infer<typeof UrlVerification>;

const Authorization = z.object({
  enterprise_id: SlackId.nullish(),
  team_id: SlackId.nullish(),
  user_id: SlackId,
  is_bot: z.boolean().optional(),
});

const EventCallbackHead = z.object({
  type: z.literal("event_callback"),
  team_id: SlackId,
  api_app_id: SlackId,
  event_id: z.string().regex(/^Ev[A-Z0-9]{1,40}$/, "expected a Slack event id"),
  event_time: z.number().int().nonnegative(),
  event: z.looseObject({ type: TypeName }),
  authorizations: z.array(Authorization).max(10).optional(),
});
export type EventCallback = Omit<z.infer<typeof EventCallbackHead>, "event"> & {
  event: SlackEvent;
};

/** An envelope type we do not handle (app_rate_limited, …): answered 200, nothing done. */
export interface UnsupportedEnvelope {
  type: "unsupported";
  envelopeType: string;
}
export type SlackEnvelope = UrlVerification | EventCallback | UnsupportedEnvelope;

export type ParseResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** `event.channel: expected a Slack id` — the first failing path and what was expected. */
function failure(
  issues: readonly z.core.$ZodIssue[],
  prefix: string[] = [],
): {
  ok: false;
  error: string;
} {
  const first = issues[0];
  if (!first) return { ok: false, error: "invalid payload" };
  const path = [...prefix, ...first.path.map(String)].join(".") || "(body)";
  const message = /received undefined$/.test(first.message) ? "required" : first.message;
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  return { ok: false, error: `${path}: ${message}${more}` };
}

function parseJson(raw: string, what: string): ParseResult<unknown> {
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return { ok: false, error: `${what}: not JSON` };
  }
}

/** An Events API request body (after the signature check). */
export function parseEventEnvelope(rawBody: string): ParseResult<SlackEnvelope> {
  const json = parseJson(rawBody, "(body)");
  if (!json.ok) return json;
  const head = z.object({ type: TypeName }).safeParse(json.value);
  if (!head.success) return failure(head.error.issues);
  switch (head.data.type) {
    case "url_verification": {
      const parsed = UrlVerification.safeParse(json.value);
      return parsed.success ? { ok: true, value: parsed.data } : failure(parsed.error.issues);
    }
    case "event_callback": {
      const parsed = EventCallbackHead.safeParse(json.value);
      if (!parsed.success) return failure(parsed.error.issues);
      const event = parseInnerEvent(parsed.data.event);
      if (!event.ok) return event;
      return { ok: true, value: { ...parsed.data, event: event.value } };
    }
    default:
      return { ok: true, value: { type: "unsupported", envelopeType: head.data.type } };
  }
}

function parseInnerEvent(event: { type: string }): ParseResult<SlackEvent> {
  const schema =
    event.type === "app_mention" ? AppMentionEvent : event.type === "message" ? MessageEvent : null;
  if (!schema) return { ok: true, value: { type: "unsupported", eventType: event.type } };
  const parsed = schema.safeParse(event);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : failure(parsed.error.issues, ["event"]);
}

// Interactivity: a click on a Block Kit button.

const BlockAction = z.object({
  action_id: z.string().min(1).max(255),
  block_id: z.string().max(255).optional(),
  value: z.string().max(2_000).optional(),
  type: TypeName.optional(),
  action_ts: Ts.optional(),
});
export type BlockAction = z.infer<typeof BlockAction>;

export const BlockActionsPayload = z.object({
  type: z.literal("block_actions"),
  user: z.object({
    id: SlackId,
    username: z.string().max(255).optional(),
    name: z.string().max(255).optional(),
    team_id: SlackId.optional(),
  }),
  team: z.object({ id: SlackId }).nullable(),
  channel: z.object({ id: SlackId, name: z.string().max(255).optional() }).optional(),
  message: z.object({ ts: Ts, thread_ts: Ts.optional() }).optional(),
  container: z.object({
    type: TypeName,
    message_ts: Ts.optional(),
    channel_id: SlackId.optional(),
    thread_ts: Ts.optional(),
    is_ephemeral: z.boolean().optional(),
  }),
  actions: z.array(BlockAction).min(1).max(25),
  response_url: z.url().max(2_048).optional(),
  trigger_id: z.string().max(255).optional(),
});
export type BlockActionsPayload = z.infer<typeof BlockActionsPayload>;

/** An interaction type we do not handle (view_submission, shortcut, …). */
export interface UnsupportedInteraction {
  type: "unsupported";
  payloadType: string;
}

/** The interactivity request body: `application/x-www-form-urlencoded` with one field `payload`. */
export function parseInteractionForm(
  rawBody: string,
): ParseResult<BlockActionsPayload | UnsupportedInteraction> {
  const payload = new URLSearchParams(rawBody).get("payload");
  if (payload === null) return { ok: false, error: "payload: required" };
  const json = parseJson(payload, "payload");
  if (!json.ok) return json;
  const head = z.object({ type: TypeName }).safeParse(json.value);
  if (!head.success) return failure(head.error.issues, ["payload"]);
  if (head.data.type !== "block_actions")
    return { ok: true, value: { type: "unsupported", payloadType: head.data.type } };
  const parsed = BlockActionsPayload.safeParse(json.value);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : failure(parsed.error.issues, ["payload"]);
}

// Slash commands: a form-encoded POST answered within 3 s; later answers go to response_url.

export const SlashCommand = z.object({
  command: z.string().regex(/^\/[a-z0-9_-]{1,32}$/i, "expected a slash command"),
  text: z.string().max(4_000),
  user_id: SlackId,
  user_name: z.string().max(255).optional(),
  channel_id: SlackId,
  team_id: SlackId,
  response_url: z.url().max(2_048),
  trigger_id: z.string().min(1).max(255),
});
export type SlashCommand = z.infer<typeof SlashCommand>;

export function parseSlashCommand(rawBody: string): ParseResult<SlashCommand> {
  const fields = Object.fromEntries(new URLSearchParams(rawBody));
  // Slack always sends `text`, empty when the person typed nothing after the command.
  const parsed = SlashCommand.safeParse({ text: "", ...fields });
  return parsed.success ? { ok: true, value: parsed.data } : failure(parsed.error.issues);
}
