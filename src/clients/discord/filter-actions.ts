// What the bot does on Discord with a message its server's filter declined (the message itself is
// already stored, as a turn the rules decline): deletes it when the filter's action is "delete",
// and reports it in the filter's log channel when one is set. Each is one request through the
// shared rate limiter (rest.ts retries a few times, then gives up); a failure is logged, never
// retried past that, and changes nothing of what was stored.
import { errorField, log } from "../../log.ts";
import type { FilterVerdict, MessageFilterRules } from "../../runtime/access/message-filter.ts";
import type { DiscordRest } from "./rest.ts";

/** How much of the declined message the report quotes. */
export const REPORT_QUOTE_CHARS = 300;

/** The rule that declined a message, as people read it. */
export const FILTER_RULE_NAMES: Record<FilterVerdict, string> = {
  word: "a filtered word",
  pattern: "a filtered pattern",
  links: "too many links",
  account_age: "an account too new",
};

export interface FilteredMessage {
  channelId: string;
  messageId: string;
  userId: string;
  text: string;
  verdict: FilterVerdict;
}

/** Discord's epoch (2015-01-01): a snowflake's top 42 bits are milliseconds since it. */
const DISCORD_EPOCH_MS = 1_420_070_400_000;

/** When a Discord account was made, read from its user id (a snowflake); null if not one. */
export function accountCreatedAt(userId: string): number | null {
  if (!/^\d{1,20}$/.test(userId)) return null;
  return Number(BigInt(userId) >> 22n) + DISCORD_EPOCH_MS;
}

/** Deletes and reports a declined message as the server's filter says; never throws. */
export async function actOnFiltered(
  rest: DiscordRest,
  rules: Pick<MessageFilterRules, "action" | "logChannelId">,
  message: FilteredMessage,
): Promise<void> {
  const where = { channelId: message.channelId, messageId: message.messageId };
  const deleted =
    rules.action === "delete"
      ? await rest
          .deleteChannelMessage(message.channelId, message.messageId, `filter: ${message.verdict}`)
          .then(
            () => true,
            (error: unknown) => {
              // Most often the bot lacks Manage Messages there, or the author deleted it first.
              log.warn("discord_filter_delete_failed", { ...where, error: errorField(error) });
              return false;
            },
          )
      : false;
  if (!rules.logChannelId) return;
  try {
    await rest.channelMessage(rules.logChannelId, { content: filterReport(message, deleted) });
  } catch (error) {
    log.warn("discord_filter_report_failed", {
      ...where,
      logChannelId: rules.logChannelId,
      error: errorField(error),
    });
  }
}

/**
 * The log channel's line: who, where, which rule, the message quoted and cut short. Mentions in it
 * are links only: rest.ts sends every message with `allowed_mentions: {parse: []}`.
 */
export function filterReport(message: FilteredMessage, deleted: boolean): string {
  // By code point, so an emoji is never cut in half.
  const chars = Array.from(message.text);
  const text =
    chars.length > REPORT_QUOTE_CHARS
      ? `${chars.slice(0, REPORT_QUOTE_CHARS).join("")}…`
      : message.text;
  const quoted = (text.trim() || "(no text)")
    .split("\n")
    .map((line) => `> ${line}`)
    .join("\n");
  return [
    `Filtered (${FILTER_RULE_NAMES[message.verdict]}): a message from <@${message.userId}> in <#${message.channelId}>${deleted ? ", deleted" : ""}.`,
    quoted,
  ].join("\n");
}
