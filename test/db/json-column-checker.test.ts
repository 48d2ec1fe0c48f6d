// The one JSON-column checker (src/db/json-column.ts), used for D1's columns and for the Durable
// Objects' SQLite alike: a value that is not JSON, or not in the shape, is an internal error that
// names where it lives, the field and what was expected there, and never repeats what is stored.
// Saved-state versions: every older version reads (upgraded), a newer one is refused.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  JsonColumnError,
  NewerSavedStateError,
  readJsonColumn,
  readSaved,
  savedShape,
  writeSaved,
} from "../../src/db/json-column.ts";
import { inObjectStorage } from "../../src/objects/shared/stored-shapes.ts";
import { InternalError } from "../../src/runtime/util/errors.ts";

const Secrets = z.object({
  scopes: z.array(z.enum(["agents:read", "agents:write"])),
  apiKey: z.string().refine((key) => key.startsWith("sk-"), { message: "bad key" }),
  nested: z.strictObject({ depth: z.number() }).optional(),
});

function failure(text: string, where = "api_tokens.secrets of tok_1"): JsonColumnError {
  try {
    readJsonColumn(Secrets, text, where);
  } catch (error) {
    if (error instanceof JsonColumnError) return error;
    throw error;
  }
  throw new Error("the value was accepted");
}

describe("the JSON-column checker", () => {
  it("returns a value in the shape as it was stored", () => {
    const value = { scopes: ["agents:read"], apiKey: "sk-1" };
    expect(readJsonColumn(Secrets, JSON.stringify(value), "x")).toEqual(value);
  });

  it("reports a value that is not JSON by where it lives, as an internal error", () => {
    const error = failure("{SECRET-not-json");
    expect(error).toBeInstanceOf(InternalError);
    expect(error.code).toBe("internal");
    expect(error.status).toBe(500);
    expect(error.message).toBe("api_tokens.secrets of tok_1 is not valid JSON");
  });

  it("names the field and what was expected, never the stored content", () => {
    const cases: Array<[unknown, string]> = [
      [
        { scopes: ["agents:read", "SECRET-scope"], apiKey: "sk-1" },
        "scopes.1: not one of the values this version knows",
      ],
      [{ scopes: [], apiKey: 42 }, "apiKey: expected string"],
      [{ scopes: [], apiKey: "SECRET-key" }, "apiKey: fails this version's check"],
      [
        { scopes: [], apiKey: "sk-1", nested: { depth: 1, SECRET: "SECRET-value" } },
        "nested: has fields this version does not allow",
      ],
      ["SECRET-string", "the value: expected object"],
    ];
    for (const [value, problem] of cases) {
      const error = failure(JSON.stringify(value));
      expect(error.message).toBe(
        `api_tokens.secrets of tok_1 is not in the expected shape (${problem})`,
      );
      expect(error.message).not.toContain("SECRET");
    }
  });

  it("names a Durable Object's column the same way, with its place", () => {
    const error = failure('{"scopes":"all"}', inObjectStorage("turn t1: outcome"));
    expect(error.message).toBe(
      "turn t1: outcome in this object's storage is not in the expected shape (scopes: expected array)",
    );
  });
});

describe("saved-state versions", () => {
  // Version 1 named the person `name`; version 2 splits it; version 3 adds a default language.
  const Person = z.looseObject({ first: z.string(), last: z.string(), language: z.string() });
  const person = savedShape(Person, {
    version: 3,
    upgrades: {
      1: ({ name, ...rest }) => {
        const [first = "", ...last] = String(name).split(" ");
        return { ...rest, first, last: last.join(" ") };
      },
      2: (value) => ({ language: "en", ...value }),
    },
  });
  const read = (value: unknown) => readSaved(person, JSON.stringify(value), "people.data of p1");

  it("writes the version beside the value's fields, and reads it back without it", () => {
    const text = writeSaved(person, { first: "Ada", last: "Lovelace", language: "en" });
    expect(JSON.parse(text)).toEqual({ v: 3, first: "Ada", last: "Lovelace", language: "en" });
    expect(read(JSON.parse(text))).toEqual({ first: "Ada", last: "Lovelace", language: "en" });
  });

  it("reads every older version, a value without one as version 1, upgrading each step", () => {
    const ada = { first: "Ada", last: "Lovelace", language: "en" };
    expect(read({ name: "Ada Lovelace" })).toEqual(ada);
    expect(read({ v: 1, name: "Ada Lovelace" })).toEqual(ada);
    expect(read({ v: 2, first: "Ada", last: "Lovelace" })).toEqual(ada);
    expect(read({ v: 3, ...ada, since: 1843 })).toEqual({ ...ada, since: 1843 });
  });

  it("refuses a newer version, and a version that is not one, naming where it is", () => {
    expect(() => read({ v: 4, first: "Ada" })).toThrow(
      new NewerSavedStateError(
        "people.data of p1 was written by a newer version of the code (saved-state version 4; this version reads versions 1 to 3)",
      ),
    );
    expect(() => read({ v: "3", first: "Ada" })).toThrow(
      "people.data of p1 is not in the expected shape (v: not a saved-state version)",
    );
    expect(() => read({ v: 3, first: "Ada", last: 7, language: "en" })).toThrow(
      "people.data of p1 is not in the expected shape (last: expected string)",
    );
  });

  it("needs an upgrade from every older version", () => {
    expect(() => savedShape(Person, { version: 2, upgrades: {} })).toThrow(
      "saved-state version 1 has no upgrade",
    );
  });
});
