// Model-facing tool names for MCP tools: `<server>__<tool>`, sanitized to the model API's rule
// (^[a-zA-Z0-9_-]{1,64}$). Long names keep a hash of the original so two long names stay apart;
// names that still collide after sanitizing get a numeric suffix, in a stable order.
import { fnv1a32 } from "../runtime/util/hashing.ts";

export const MODEL_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_NAME = 64;

export function namespacedToolNames(server: string, tools: readonly string[]): Map<string, string> {
  const result = new Map<string, string>();
  const taken = new Set<string>();
  for (const original of [...tools].sort()) {
    const base = fit(`${server}__${original.replace(/[^a-zA-Z0-9_-]/g, "_")}`, original);
    let name = base;
    for (let n = 2; taken.has(name); n += 1) name = fit(`${base}_${n}`, `${original}#${n}`);
    taken.add(name);
    result.set(original, name);
  }
  return result;
}

function fit(name: string, original: string): string {
  if (name.length <= MAX_NAME) return name;
  // 32-bit FNV-1a as 8 hex digits: short, stable, enough to tell names apart.
  const suffix = `_${fnv1a32(original).toString(16).padStart(8, "0")}`;
  return name.slice(0, MAX_NAME - suffix.length) + suffix;
}
