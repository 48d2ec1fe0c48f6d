// JSON columns read back from D1 are untrusted (a hand edit, an older version's shape), so each is
// parsed with its zod schema instead of `JSON.parse(x) as T`. A bad value is reported by where it
// lives (table, column, row), never by its content, which may hold a secret.
import type { z } from "zod";
import { InternalError } from "../runtime/util/errors.ts";

/** `where` names the value for the error, e.g. `api_tokens.scopes of tok_1234`. */
export function readJsonColumn<Schema extends z.ZodType>(
  schema: Schema,
  text: string,
  where: string,
): z.output<Schema> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InternalError(`${where} is not valid JSON`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InternalError(`${where} does not have the expected shape`);
  return parsed.data;
}
