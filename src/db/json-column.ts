// The one checker for JSON columns read back from storage: D1's tables and the SQLite of the
// Durable Objects (the turn journal, the task store, whose shapes are in
// src/objects/shared/stored-json.ts and beside their stores). A stored value is untrusted (a hand
// edit, an older version's shape), so it is parsed with its zod schema instead of
// `JSON.parse(x) as T`. A bad value is reported by where it lives (table, column, row, and the
// path of the field inside it) and by what was expected there, never by its content, which may
// hold a secret.
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
