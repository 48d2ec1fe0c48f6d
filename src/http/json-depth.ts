// How deeply free-form JSON in a request may nest. JSON.parse accepts any depth, but what runs
// after it does not: JSON.stringify throws RangeError (a 500) on a few thousand levels of objects
// with index-like keys ({"0":{"0":...}}), and SQLite's JSON functions refuse more than 1,000.
// Checked before either sees the value; the check itself looks no deeper than its limit.

/** The path to the first object or array nested more than `levels` deep in `value`, or null. */
export function pathNestedDeeperThan(
  value: unknown,
  levels: number,
  path: readonly string[] = [],
): string[] | null {
  if (typeof value !== "object" || value === null) return null;
  if (levels === 0) return [...path];
  for (const [key, child] of Object.entries(value)) {
    const found = pathNestedDeeperThan(child, levels - 1, [...path, key]);
    if (found) return found;
  }
  return null;
}
