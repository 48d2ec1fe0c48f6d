// The one checker for JSON columns read back from storage: D1's tables and the SQLite of the
// Durable Objects (the turn journal, the task store, whose shapes are in
// src/objects/shared/stored-shapes.ts and beside their stores). A stored value is untrusted (a hand
// edit, an older version's shape), so it is parsed with its zod schema instead of
// `JSON.parse(x) as T`. A bad value is reported by where it lives (table, column, row, and the
// path of the field inside it) and by what was expected there, never by its content, which may
// hold a secret. What the objects keep across deploys also carries a saved-state version (below).
import type { z } from "zod";
import { InternalError } from "../runtime/util/errors.ts";

/** A stored JSON value that does not parse, or is not in the shape this version reads. */
export class JsonColumnError extends InternalError {}

/**
 * Parses and checks a JSON column. `where` names the value for the error, e.g.
 * `api_tokens.scopes of tok_1234` or `turn t1: outcome in this object's storage`.
 */
export function readJsonColumn<Schema extends z.ZodType>(
  schema: Schema,
  text: string,
  where: string,
): z.output<Schema> {
  return checkJsonValue(schema, parseJson(text, where), where);
}

/** Checks a value already parsed (a JSON column, or a payload the platform parsed for us). */
export function checkJsonValue<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  where: string,
): z.output<Schema> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const path = issue && issue.path.length > 0 ? issue.path.map(String).join(".") : "the value";
  throw new JsonColumnError(
    `${where} is not in the expected shape (${path}: ${issue ? expected(issue) : "invalid"})`,
  );
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new JsonColumnError(`${where} is not valid JSON`);
  }
}

/**
 * What the schema wanted, from the issue's kind alone: zod's own messages may quote a key or a
 * refinement's text, and a stored value's content must not reach an error.
 */
function expected(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return `expected ${issue.expected}`;
    case "invalid_value":
      return "not one of the values this version knows";
    case "invalid_union":
      return "none of the shapes this version knows";
    case "too_big":
    case "too_small":
      return "out of range";
    case "unrecognized_keys":
      return "has fields this version does not allow";
    case "custom":
      return "fails this version's check";
    default:
      return issue.code.replaceAll("_", " ");
  }
}

// ---- saved-state versions -------------------------------------------------------------------
// What outlives a deploy (a Durable Object's journal, tasks and schedules) carries the version of
// its shape in a `v` field beside its own fields, as the turn journal's tool-call rows first did.
// A value without one was written before versions were recorded: it is version 1. A reader
// accepts every version ever written, upgrading an older one step by step to the shape this code
// uses, and refuses a version newer than it knows (a rollback, say) instead of guessing at it.

/** Turns a value of one saved-state version into the next version's shape. */
export type SavedStateUpgrade = (value: Record<string, unknown>) => Record<string, unknown>;

export interface SavedShape<T extends object> {
  /** The shape of the version this code writes, without `v`. */
  readonly shape: z.ZodType<T>;
  /** The version this code writes. */
  readonly version: number;
  /** `upgrades[n]` turns a version-n value into version n + 1's shape, for every n < version. */
  readonly upgrades: Readonly<Record<number, SavedStateUpgrade>>;
}

/** A value stored by a version of the code newer than this one. */
export class NewerSavedStateError extends JsonColumnError {}

export function savedShape<T extends object>(
  shape: z.ZodType<T>,
  history: { version: number; upgrades: Record<number, SavedStateUpgrade> } = {
    version: 1,
    upgrades: {},
  },
): SavedShape<T> {
  for (let n = 1; n < history.version; n++)
    if (!history.upgrades[n]) throw new Error(`saved-state version ${n} has no upgrade`);
  return { shape, ...history };
}

/** The value as it is stored: its fields and this code's version. */
export function withSavedVersion<T extends object>(
  saved: SavedShape<T>,
  value: T,
): T & { v: number } {
  // `v` first, for whoever reads the row, and last, so that it is this code's.
  return Object.assign({ v: saved.version }, value, { v: saved.version });
}

/** The JSON text of a value as it is stored, with this code's version. */
export function writeSaved<T extends object>(saved: SavedShape<T>, value: T): string {
  return JSON.stringify(withSavedVersion(saved, value));
}

/** Parses a stored value, upgrades it from its version and checks it; `where` names it. */
export function readSaved<T extends object>(saved: SavedShape<T>, text: string, where: string): T {
  return checkSaved(saved, parseJson(text, where), where);
}

/** Like readSaved, for a value already parsed (a schedule's payload the SDK parsed). */
export function checkSaved<T extends object>(
  saved: SavedShape<T>,
  value: unknown,
  where: string,
): T {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return checkJsonValue(saved.shape, value, where);
  const { v = 1, ...fields } = value as Record<string, unknown>;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1)
    throw new JsonColumnError(
      `${where} is not in the expected shape (v: not a saved-state version)`,
    );
  if (v > saved.version)
    throw new NewerSavedStateError(
      `${where} was written by a newer version of the code (saved-state version ${v}; this version reads versions 1 to ${saved.version})`,
    );
  let upgraded = fields;
  for (let n = v; n < saved.version; n++) upgraded = saved.upgrades[n]!(upgraded);
  return checkJsonValue(saved.shape, upgraded, where);
}
