// Canonical JSON: object keys sorted, undefined dropped. Two values that mean the same thing give
// the same text, which makes it usable as a cache key (identical tool calls) and as the input of a
// request fingerprint (Idempotency-Key reuse).

/** JSON with sorted keys, so `{a,b}` and `{b,a}` are the same call. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
