// The filter before the model: a place's rules (a Discord server's `filter`, a Telegram or Slack
// client's) that decline a message before any model call. Words, patterns, a link limit and a
// minimum account age. Patterns are RE2 syntax, matched by re2js in time linear in the message,
// and their compiled size is bounded (filter-cost.ts), so no rule set can make a message slow;
// one RE2 refuses is refused saying why (filter-pattern-syntax.ts).
// Pure: a rule set is compiled once (words into a trie of tokens, patterns into one RE2 program)
// and the surface asks `filterVerdict` with what it knows of the sender; the turn carries it.
import { RE2JS } from "re2js";
import { z } from "zod";
import { patternBudget, patternInstructions, type SuspendedPattern } from "./filter-cost.ts";
import { patternSyntaxError, regexLiteralError } from "./filter-pattern-syntax.ts";

const MAX_PATTERN_CHARS = 200;

const FilterFields = {
  /** Declined when the message holds one of these as a whole word (case-insensitive). */
  words: z.array(z.string().trim().min(1).max(100)).max(500).default([]),
  /**
   * Declined when one matches anywhere (RE2 syntax without slashes or flags, case-insensitive;
   * linear time, so no lookaround or backreferences).
   */
  patterns: z
    .array(
      z
        .string()
        .min(1)
        .max(MAX_PATTERN_CHARS)
        .superRefine((source, ctx) => {
          const error = patternSyntaxError(source);
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
  /**
   * Read only: stored patterns past the cost bound, kept as written but not applied. Worked out
   * again from `patterns` whenever rules are parsed; whatever a request sends here is replaced.
   */
  suspended: z
    .array(z.object({ index: z.number().int(), pattern: z.string(), reason: z.string() }))
    .optional()
    .describe(
      "Read only: stored patterns past the cost bound (filter-cost.ts), kept but not applied",
    ),
};

/**
 * Saving: a pattern written like a regex literal ("/casino/i") or past the cost bound is refused
 * at its path (`filter.patterns.3`). Only when saving: a config that failed to parse would take
 * every other setting down, so one stored before loads (a literal as written, applied as it was;
 * one past the bound suspended).
 */
function savable(rules: { patterns: string[] }, ctx: z.RefinementCtx): void {
  rules.patterns.forEach((pattern, index) => {
    const literal = regexLiteralError(pattern);
    if (literal) ctx.addIssue({ code: "custom", path: ["patterns", index], message: literal });
  });
  // A pattern RE2 cannot compile has its own issue already.
  for (const { index, pattern, reason } of patternBudget(rules.patterns).suspended)
    if (patternInstructions(pattern) !== null)
      ctx.addIssue({ code: "custom", path: ["patterns", index], message: reason });
}

/** Reading: which patterns are suspended, worked out from the patterns themselves. */
function markSuspended<T extends { patterns: string[]; suspended?: SuspendedPattern[] }>(
  rules: T,
): T {
  const { suspended } = patternBudget(rules.patterns);
  const { suspended: _given, ...rest } = rules;
  return (suspended.length > 0 ? { ...rest, suspended } : rest) as T;
}

/**
 * A filter as it may be saved now: every field checked, no pattern written like a regex literal,
 * patterns within the cost bound.
 */
export const MessageFilterRules = z
  .strictObject(FilterFields)
  .superRefine(savable)
  .overwrite(markSuspended);
export type MessageFilterRules = z.infer<typeof MessageFilterRules>;

/**
 * A filter as read back from D1: one saved before the cost bound still loads (a config that
 * failed to parse would take every other setting down with it), its patterns past the bound
 * suspended and reported in `suspended`, the rest applied.
 */
export const StoredMessageFilterRules = z.strictObject(FilterFields).overwrite(markSuspended);

/** Why a Telegram or Slack filter may not set a field Discord's has. */
const DISCORD_ONLY: Record<string, string> = {
  minAccountAgeDays: "Telegram and Slack do not say how old an account is",
  action: "here the filter only declines: deleting is Discord's",
  logChannelId: "a log channel is Discord's",
};
const {
  minAccountAgeDays: _age,
  action: _action,
  logChannelId: _log,
  ...ChatFilterShape
} = FilterFields;

/**
 * The filter of a Telegram or Slack client: neither platform says how old an account is, and the
 * webhook deletes nothing, so those fields are refused there, each at its own path (a 400 naming
 * `filter.minAccountAgeDays`), as is any other key. Saved, patterns are checked as Discord's are
 * (no regex literals, within the cost bound); read back (`stored`), those past it are suspended.
 */
function chatFilterRules(saving: boolean) {
  return z
    .looseObject(ChatFilterShape)
    .superRefine((rules, ctx) => {
      for (const key of Object.keys(rules)) {
        if (key in ChatFilterShape) continue;
        ctx.addIssue({
          code: "custom",
          path: [key],
          message: DISCORD_ONLY[key] ?? "not a filter setting",
        });
      }
      if (saving) savable(rules, ctx);
    })
    .overwrite(markSuspended);
}
export const ChatFilterRules = chatFilterRules(true);
export const StoredChatFilterRules = chatFilterRules(false);
export type ChatFilterRules = z.infer<typeof ChatFilterRules>;

/** Which rule declined a message. */
export const FILTER_VERDICTS = ["word", "pattern", "links", "account_age"] as const;
export type FilterVerdict = (typeof FILTER_VERDICTS)[number];

/** The rules the verdict reads (a Telegram or Slack filter has no account age). */
export type FilterRules = Pick<
  MessageFilterRules,
  "words" | "patterns" | "maxLinks" | "minAccountAgeDays"
>;

/** A stored message the filter declined (its `metadata.filtered`): no later prompt shows it. */
export function declinedByFilter(message: { metadata: Record<string, unknown> }): boolean {
  return typeof message.metadata.filtered === "string";
}

export interface FilterSubject {
  text: string;
  /** When the sender's account was made (ms since the epoch); null where the platform does not say. */
  accountCreatedAt: number | null;
  now: number;
}

const DAY_MS = 86_400_000;
/** Rule sets compiled at once when each message brings a fresh copy (a config read per request). */
const MAX_COMPILED = 32;

interface CompiledFilter {
  /** Words of one token, folded. */
  words: Set<string>;
  /** Words of several tokens ("buy now"): a trie of tokens, a phrase ending where `end` is. */
  phrases: PhraseNode;
  /** Words with no letter or digit (an emoji): matched as folded substrings. */
  symbols: string[];
  patterns: RE2JS[];
  maxLinks: number | null;
  minAccountAgeMs: number | null;
}

interface PhraseNode {
  next: Map<string, PhraseNode>;
  end: boolean;
}

const byObject = new WeakMap<FilterRules, CompiledFilter>();
const byText = new Map<string, CompiledFilter>();

/** The first rule that declines the message (account age, words, links, patterns), else null. */
export function filterVerdict(rules: FilterRules, subject: FilterSubject): FilterVerdict | null {
  const filter = compiled(rules);
  if (
    filter.minAccountAgeMs !== null &&
    subject.accountCreatedAt !== null &&
    subject.now - subject.accountCreatedAt < filter.minAccountAgeMs
  )
    return "account_age";
  const folded = fold(subject.text);
  if (holdsWord(filter, folded)) return "word";
  if (filter.maxLinks !== null && countLinks(subject.text) > filter.maxLinks) return "links";
  if (filter.patterns.some((pattern) => pattern.test(subject.text))) return "pattern";
  return null;
}

/** Compiles a rule set once: by the object while it lives, else by its text (a few kept). */
function compiled(rules: FilterRules): CompiledFilter {
  const known = byObject.get(rules);
  if (known) return known;
  const key = JSON.stringify([
    rules.words,
    rules.patterns,
    rules.maxLinks ?? null,
    rules.minAccountAgeDays ?? null,
  ]);
  let filter = byText.get(key);
  if (filter) {
    // Most recently used last, so the oldest goes first.
    byText.delete(key);
  } else {
    filter = compile(rules);
    if (byText.size >= MAX_COMPILED) byText.delete(byText.keys().next().value as string);
  }
  byText.set(key, filter);
  byObject.set(rules, filter);
  return filter;
}

function compile(rules: FilterRules): CompiledFilter {
  // Only the patterns within the cost bound: one saved before the bound and past it is suspended
  // (reported where the config is shown), never applied, whoever built these rules.
  const { applied } = patternBudget(rules.patterns);
  const filter: CompiledFilter = {
    words: new Set(),
    phrases: { next: new Map(), end: false },
    symbols: [],
    // Validated with RE2's syntax on the way in (the config's schema); a pattern compiled without
    // CASE_INSENSITIVE there compiles with it here.
    // One program for all of them: RE2 runs an alternation in a single pass over the message, so
    // the cost stays one scan however many patterns there are (each compiles alone at validation).
    patterns:
      applied.length > 0
        ? [
            RE2JS.compile(
              applied.map((source) => `(?:${source})`).join("|"),
              RE2JS.CASE_INSENSITIVE,
            ),
          ]
        : [],
    maxLinks: rules.maxLinks ?? null,
    minAccountAgeMs: rules.minAccountAgeDays ? rules.minAccountAgeDays * DAY_MS : null,
  };
  for (const word of rules.words) {
    const folded = fold(word);
    const tokens = tokenize(folded);
    if (tokens.length === 0) {
      if (folded.trim()) filter.symbols.push(folded.trim());
    } else if (tokens.length === 1) filter.words.add(tokens[0]!);
    else {
      let node = filter.phrases;
      for (const token of tokens) {
        let child = node.next.get(token);
        if (!child) {
          child = { next: new Map(), end: false };
          node.next.set(token, child);
        }
        node = child;
      }
      node.end = true;
    }
  }
  return filter;
}

/**
 * Whether the message holds a word: its tokens are looked up in a set, so the cost is linear in
 * the message, and "class" never matches inside "classic". Phrases are walked in a trie from each
 * token, so the cost is at most the longest phrase's tokens per token, however many phrases share
 * a start (500 phrases of "a a a …" took 427 ms on "a a a …" compared one by one).
 */
function holdsWord(filter: CompiledFilter, folded: string): boolean {
  if (filter.symbols.some((symbol) => folded.includes(symbol))) return true;
  if (filter.words.size === 0 && filter.phrases.next.size === 0) return false;
  const tokens = tokenize(folded);
  for (let i = 0; i < tokens.length; i++) {
    if (filter.words.has(tokens[i]!)) return true;
    let node = filter.phrases.next.get(tokens[i]!);
    for (let k = i + 1; node && !node.end; k++)
      node = k < tokens.length ? node.next.get(tokens[k]!) : undefined;
    if (node?.end) return true;
  }
  return false;
}

/** Case and compatibility forms folded: "ＢＵＹ" and "Buy" are the same word. */
function fold(text: string): string {
  return text.normalize("NFKC").toLowerCase();
}

/**
 * Runs of letters, combining marks and digits in any script. The pattern has no nested
 * repetition, so each position is looked at a bounded number of times.
 */
const WORD_TOKEN = /[\p{L}\p{M}\p{N}]+/gu;

function tokenize(folded: string): string[] {
  return folded.match(WORD_TOKEN) ?? [];
}

/**
 * http(s) links and bare Discord invites (discord.gg/…, discord.com/invite/…), counted in one
 * pass: a link's match takes its whole run of non-space characters, so an invite written as a
 * full URL counts once.
 */
const LINK = /https?:\/\/\S+|(?<![\p{L}\p{N}])(?:discord\.gg|discord(?:app)?\.com\/invite)\/\S+/giu;

function countLinks(text: string): number {
  let count = 0;
  for (const _ of text.matchAll(LINK)) count += 1;
  return count;
}
