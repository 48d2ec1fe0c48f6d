// Size bounds for character files, which come from untrusted users. The caller caps the file's
// bytes; these caps stop a small file from being shaped to hurt us (a 1 MB string bound for every
// prompt, a million tiny array entries, nesting deep enough to blow a recursive walk).

import { z } from "zod";

export const MAX_NAME_CHARS = 100;
export const MAX_STRING_CHARS = 20_000;
export const MAX_ARRAY_ENTRIES = 1000;
export const MAX_RECORD_KEYS = 1000;
export const MAX_KEY_CHARS = 200;
/** Nesting allowed inside free-form values (unknown settings keys, clientConfig). */
export const MAX_JSON_DEPTH = 10;

export function boundedString(): z.ZodString {
  return z
    .string({ error: (issue) => (issue.input === undefined ? "required" : "expected a string") })
    .max(MAX_STRING_CHARS);
}

export function boundedArray<T extends z.ZodType>(item: T) {
  return z.array(item).max(MAX_ARRAY_ENTRIES);
}

export function stringList() {
  return boundedArray(boundedString());
}

export function boundedRecord<T extends z.ZodType>(value: T) {
  return z
    .record(z.string().max(MAX_KEY_CHARS), value)
    .refine(
      (record) => Object.keys(record).length <= MAX_RECORD_KEYS,
      `at most ${MAX_RECORD_KEYS} keys`,
    );
}

/** Any JSON value within the bounds above; kept verbatim, so only its shape and size are checked. */
export function jsonValue() {
  return z.unknown().superRefine((value, ctx) => {
    for (const problem of findJsonProblems(value, [], 0)) {
      ctx.addIssue({ code: "custom", message: problem.message, path: problem.path });
    }
  });
}

export function jsonObject() {
  return boundedRecord(jsonValue());
}

interface JsonProblem {
  path: (string | number)[];
  message: string;
}

function findJsonProblems(value: unknown, path: (string | number)[], depth: number): JsonProblem[] {
  if (value === null || typeof value === "boolean") return [];
  if (typeof value === "number")
    return Number.isFinite(value) ? [] : [{ path, message: "expected a finite number" }];
  if (typeof value === "string") {
    return value.length <= MAX_STRING_CHARS
      ? []
      : [{ path, message: `at most ${MAX_STRING_CHARS} characters` }];
  }
  if (depth >= MAX_JSON_DEPTH)
    return [{ path, message: `nested deeper than ${MAX_JSON_DEPTH} levels` }];
  if (Array.isArray(value)) {
    if (value.length > MAX_ARRAY_ENTRIES)
      return [{ path, message: `at most ${MAX_ARRAY_ENTRIES} entries` }];
    return value.flatMap((item, index) => findJsonProblems(item, [...path, index], depth + 1));
  }
  if (isPlainObject(value)) {
    const entries = Object.entries(value);
    if (entries.length > MAX_RECORD_KEYS)
      return [{ path, message: `at most ${MAX_RECORD_KEYS} keys` }];
    return entries.flatMap(([key, item]) =>
      // JSON.parse makes "__proto__" an own key; kept verbatim it would poison a later Object.assign.
      key === "__proto__"
        ? [{ path: [...path, key], message: "reserved key" }]
        : findJsonProblems(item, [...path, key], depth + 1),
    );
  }
  return [{ path, message: "expected a JSON value" }];
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
