// The filter before the model: a place's rules (a Discord server's `filter`, a Telegram or Slack
// client's) that decline a message before any model call. Words, patterns, a link limit and a
// minimum account age. Patterns are RE2 syntax, matched by re2js in time linear in the message
// (no backreferences or lookaround, so no pattern can make a message take long to check).
// Pure: the surface evaluates it with what it knows of the sender; the turn carries the verdict.
import { RE2JS } from "re2js";
import { z } from "zod";

const MAX_PATTERN_CHARS = 200;

/** A pattern RE2 compiles; its syntax error, if not. */
function patternError(source: string): string | null {
  try {
    RE2JS.compile(source);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : "not a pattern";
  }
}

export const MessageFilterRules = z.strictObject({
  /** Declined when the message holds one of these as a whole word (case-insensitive). */
  words: z.array(z.string().trim().min(1).max(100)).max(500).default([]),
  /** Declined when one matches anywhere (RE2 syntax, case-insensitive; linear time). */
  patterns: z
    .array(
      z
        .string()
        .min(1)
        .max(MAX_PATTERN_CHARS)
        .superRefine((source, ctx) => {
          const error = patternError(source);
          if (error) ctx.addIssue({ code: "custom", message: `not an RE2 pattern: ${error}` });
        }),
    )
    .max(100)
    .default([]),
  /** Declined when it holds more links than this (0: none allowed). */
  maxLinks: z.number().int().min(0).max(100).optional(),
  /** Declined when the sender's account is younger than this many days (where the platform says). */
  minAccountAgeDays: z.number().int().min(1).max(3650).optional(),
  /** What else happens to a declined message: nothing, or deleted (Discord). */
  action: z.enum(["decline", "delete"]).default("decline"),
  /** Where a declined message is reported (a Discord channel id); none: it is only logged. */
  logChannelId: z
    .string()
    .regex(/^\d{1,20}$/, "a Discord channel id")
    .optional(),
});
export type MessageFilterRules = z.infer<typeof MessageFilterRules>;

/** Which rule declined a message. */
export type FilterVerdict = "word" | "pattern" | "links" | "account_age";
