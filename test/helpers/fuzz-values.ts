// fast-check arbitraries for the fuzz test's building blocks: values that fit a JSON Schema from
// the worker's OpenAPI document, and the ways to break them (wrong types, missing and unknown
// fields, huge strings, deep nesting, odd numbers and unicode), plus malformed JSON texts.
import fc from "fast-check";

export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minItems?: number;
  maxItems?: number;
  example?: unknown;
}

export interface ValueContext {
  /** `#/components/schemas/...` targets. */
  schemas: Record<string, JsonSchema>;
  /** An agent that exists, so agent-scoped requests get past the 404 to their validators. */
  agentId: string;
}

/** Strings that have broken parsers before: traversal, bad percent-escapes, unicode edge cases. */
export const ODD_STRINGS = [
  "",
  " ",
  ".",
  "..",
  "../../etc/passwd",
  "%",
  "%%",
  "%ZZ",
  "%2e%2e",
  "%2F",
  "%00",
  "%E0%A4%A",
  "%C0%AF",
  "%F0%9F%98",
  "null",
  "undefined",
  "NaN",
  "-1",
  "0",
  "1e309",
  "__proto__",
  "constructor",
  "toString",
  "user:alice",
  "a/b",
  "a\\b",
  "a?b=c",
  "a#b",
  "a;b",
  "😀",
  "Zoë",
  "\u202e",
  "\u0000",
  "\ud800",
  "\udfff",
  "\u200b",
  "ｆｕｌｌ",
  "<script>",
  "' OR 1=1 --",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, as text on purpose
  "${7*7}",
  "a".repeat(65),
  "a".repeat(129),
  "9".repeat(21),
];

/** Any unicode, lone surrogates included, or one of the odd strings. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 40 }) },
);

/** Numbers at the edges of what validators and SQLite integers accept. */
const ODD_NUMBERS = [
  -1,
  0,
  0.5,
  -0.5,
  1.5,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  1e308,
  -1e308,
  5e-324,
];

export const HUGE_LENGTHS = [9_000, 70_000, 600_000, 1_100_000] as const;

/** A value nested `depth` levels deep, alternating arrays and objects, either one outermost. */
export function nested(depth: number, objectOutside: boolean): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++)
    value = (depth - i) % 2 === (objectOutside ? 1 : 0) ? { a: value } : [value];
  return value;
}

/** What a broken field holds instead of what the schema asks for. */
export const oddJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, "", ...ODD_NUMBERS) },
  { weight: 3, arbitrary: oddString },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(...HUGE_LENGTHS).map((n) => "x".repeat(n)) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(50, 999, 1_001, 3_000), fc.boolean())
      .map(([depth, objectOutside]) => nested(depth, objectOutside)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(1_001, 5_000).map((n) => Array.from({ length: n }, (_, i) => i)),
  },
);

/** Keys a handler might read although the schema does not list them (character files, interactions). */
const oddKey = fc.oneof(
  fc.constantFrom(
    "__proto__",
    "constructor",
    "",
    "id",
    "extra",
    "secrets",
    "settings",
    "lore",
    "knowledge",
    "messageExamples",
    "style",
    "templates",
    "clientConfig",
    "plugins",
    "metadata",
    "attachments",
    "resolved",
    "options",
    "member",
  ),
  oddString,
);

/** A value the schema allows (pattern, enum, bounds), kept small. */
export function schemaValue(
  schema: JsonSchema,
  ctx: ValueContext,
  key = "",
): fc.Arbitrary<unknown> {
  const s = resolve(schema, ctx);
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives)
    return fc.oneof(...alternatives.map((alternative) => schemaValue(alternative, ctx, key)));
  if (s.enum && s.enum.length > 0) return fc.constantFrom(...s.enum);
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length > 1)
    return fc.oneof(...types.map((type) => schemaValue({ ...s, type }, ctx, key)));
  switch (types[0]) {
    case "object":
      return objectValue(s, ctx);
    case "array": {
      const minLength = s.minItems ?? 0;
      return fc.array(schemaValue(s.items ?? {}, ctx, key), {
        minLength,
        maxLength: Math.max(minLength, Math.min(s.maxItems ?? 3, 3)),
      });
    }
    case "string":
      return stringValue(s, ctx, key);
    case "integer": {
      const min = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -1_000);
      return fc.integer({
        min: Math.max(min, -(2 ** 31)),
        max: Math.min(s.maximum ?? 1_000, 2 ** 31 - 1),
      });
    }
    case "number":
      return fc.double({
        min: s.minimum ?? -1e6,
        max: s.maximum ?? 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
  }
  return s.example !== undefined ? fc.constant(s.example) : fc.jsonValue({ maxDepth: 2 });
}

function objectValue(s: JsonSchema, ctx: ValueContext): fc.Arbitrary<unknown> {
  const properties = Object.entries(s.properties ?? {});
  if (properties.length === 0) {
    // A free-form object (a character file): its example is the best start for reaching deep checks.
    const free = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
      maxKeys: 4,
    });
    return s.example === undefined
      ? free
      : fc.oneof({ weight: 3, arbitrary: fc.constant(s.example) }, { weight: 1, arbitrary: free });
  }
  const required = new Set(s.required ?? []);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, property] of properties) model[name] = schemaValue(property, ctx, name);
  return fc.record(model, {
    requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)),
  });
}

/** Longest string generated at its exact maximum length (longer ones are left to mutations). */
const MAX_BOUNDARY_CHARS = 10_000;

function stringValue(s: JsonSchema, ctx: ValueContext, key: string): fc.Arbitrary<string> {
  const minLength = s.minLength ?? 0;
  // Short values mostly, and values at the longest the schema allows.
  const longest =
    s.maxLength !== undefined && s.maxLength <= MAX_BOUNDARY_CHARS
      ? [fc.constant("x".repeat(s.maxLength))]
      : [];
  const plain = s.pattern
    ? fc.oneof(
        fc.stringMatching(new RegExp(s.pattern)),
        fc.stringMatching(new RegExp(s.pattern), { size: "max" }),
      )
    : s.format === "uri"
      ? fc.webUrl()
      : fc.oneof(
          {
            weight: 3,
            arbitrary: fc.string({
              minLength,
              maxLength: Math.max(minLength, Math.min(s.maxLength ?? 30, 30)),
            }),
          },
          ...longest,
        );
  return /agentid$/i.test(key)
    ? fc.oneof({ weight: 3, arbitrary: fc.constant(ctx.agentId) }, { weight: 1, arbitrary: plain })
    : plain;
}

function resolve(schema: JsonSchema, ctx: ValueContext): JsonSchema {
  const name = schema.$ref?.replace("#/components/schemas/", "");
  return name !== undefined ? { ...(ctx.schemas[name] ?? {}), ...schema, $ref: undefined } : schema;
}

export interface Mutation {
  kind: "replace" | "remove" | "add-key";
  /** Which container or field of the value, modulo how many it has. */
  at: number;
  key: string;
  payload: unknown;
}

export const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom("replace", "replace", "remove", "add-key"),
  at: fc.nat(),
  key: oddKey,
  payload: oddJson,
});

/** The value with each mutation applied to one of its fields (a copy; the input is left alone). */
export function mutate(value: unknown, mutations: readonly Mutation[]): unknown {
  const holder: Record<string, unknown> = { root: structuredClone(value) };
  const slots: Array<{ parent: Record<string, unknown> | unknown[]; key: string | number }> = [];
  const collect = (
    parent: Record<string, unknown> | unknown[],
    key: string | number,
    depth: number,
  ): void => {
    slots.push({ parent, key });
    const child = (parent as Record<string | number, unknown>)[key];
    if (depth > 8 || typeof child !== "object" || child === null) return;
    if (Array.isArray(child)) {
      for (let i = 0; i < child.length; i++) collect(child, i, depth + 1);
    } else
      for (const name of Object.keys(child))
        collect(child as Record<string, unknown>, name, depth + 1);
  };
  collect(holder, "root", 0);
  for (const m of mutations) {
    const { parent, key } = slots[m.at % slots.length]!;
    const target = (parent as Record<string | number, unknown>)[key];
    if (m.kind === "replace" || (m.kind === "remove" && parent === holder)) {
      (parent as Record<string | number, unknown>)[key] = m.payload;
    } else if (m.kind === "remove") {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[key];
    } else if (typeof target === "object" && target !== null && !Array.isArray(target)) {
      // A copy: the target may be an earlier mutation's payload, which fast-check still owns.
      (parent as Record<string | number, unknown>)[key] = withKey({ ...target }, m.key, m.payload);
    } else if (!Array.isArray(parent)) {
      withKey(parent, m.key, m.payload);
    }
  }
  return holder.root;
}

/** Sets an own key, `__proto__` included (plain assignment would change the prototype instead). */
function withKey(
  target: Record<string, unknown>,
  key: string,
  value: unknown,
): Record<string, unknown> {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return target;
}

/** JSON texts that are not JSON, or are JSON only by a lenient parser's standards. */
export function malformedJson(base: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  const broken = fc.tuple(
    base,
    fc.nat(),
    fc.constantFrom(
      "truncate",
      "trailing-comma",
      "single-quotes",
      "two-values",
      "bom",
      "comment",
      "duplicate-key",
    ),
  );
  return fc.oneof(
    fc.constantFrom(
      "",
      " ",
      "{",
      "}",
      "[",
      "{,}",
      '{"a":}',
      "NaN",
      "Infinity",
      "undefined",
      "1e999",
      "-0",
      '"\\ud800"',
      '{"__proto__":{"polluted":true}}',
      "\u0000",
      "{'a':1}",
    ),
    broken.map(([value, at, kind]) => {
      const text = JSON.stringify(value) ?? "null";
      switch (kind) {
        case "truncate":
          return text.slice(0, at % Math.max(text.length, 1));
        case "trailing-comma":
          return text.replace(/([}\]])$/, ",$1");
        case "single-quotes":
          return text.replaceAll('"', "'");
        case "two-values":
          return `${text}${text}`;
        case "bom":
          return `\ufeff${text}`;
        case "comment":
          return `/* c */${text}`;
        default:
          return text.replace(/^\{/, '{"text":1,"agentId":[],');
      }
    }),
    fc.string({ unit: "binary", maxLength: 60 }),
  );
}

/**
 * Nesting written as text, up to 100,000 levels: cheaper than building the value to stringify it.
 * Objects keyed "0" too: V8 stringifies those recursively, so they overflow where {"a":...} does not.
 */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(100, 1_001, 10_000, 100_000), fc.constantFrom("[", '{"a":', '{"0":'))
  .map(([depth, open]) =>
    open === "["
      ? "[".repeat(depth) + "]".repeat(depth)
      : `${open.repeat(depth)}1${"}".repeat(depth)}`,
  );

const DEEP_MARK = "\u0001deep\u0001";

/** The value as JSON text, with one of its fields (chosen by `at`) replaced by, or given a new key holding, the deep text. */
export function withDeepField(
  value: unknown,
  at: number,
  kind: "replace" | "add-key",
  deep: string,
): string {
  const marked = mutate(value, [{ kind, at, key: "junk", payload: DEEP_MARK }]);
  return (JSON.stringify(marked) ?? "").replace(JSON.stringify(DEEP_MARK), () => deep);
}
