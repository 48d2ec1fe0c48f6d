// A stand-in for the Vectorize binding, which has no local simulator: tests of the Vectorize
// adapter, and of the pipeline and search over it, see what a real index would hold.
import type { VectorizeBinding } from "../../src/db/memory/vectorize-index.ts";

/**
 * A stand-in for a Vectorize index: ids unique across the whole index (a namespace is an attribute
 * of the vector, as in Vectorize), cosine ranking within a namespace, equality filters, and
 * "indexed" metadata limited to the properties that have a metadata index.
 */
export function fakeVectorize(options: { dimensions?: number; indexed?: string[] } = {}) {
  const indexed = options.indexed ?? ["type", "roomId", "userId", "memoryId"];
  const vectors = new Map<
    string,
    { values: number[]; namespace?: string; metadata: Record<string, VectorizeVectorMetadata> }
  >();
  const calls: { method: string; args: unknown[] }[] = [];
  const cosine = (a: number[], b: number[]) => {
    const norm = (v: number[]) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
    return a.reduce((sum, x, i) => sum + x * b[i]!, 0) / (norm(a) * norm(b));
  };
  const binding: VectorizeBinding = {
    describe: async () => ({
      dimensions: options.dimensions ?? 3,
      vectorCount: vectors.size,
      processedUpToDatetime: 0,
      processedUpToMutation: 0,
    }),
    query: async (vector, asked) => {
      calls.push({ method: "query", args: [vector, asked] });
      const filter = (asked?.filter ?? {}) as Record<string, { $eq?: string; $in?: string[] }>;
      const matches = [...vectors.entries()]
        .filter(([, v]) => v.namespace === asked?.namespace)
        .filter(([, v]) =>
          Object.entries(filter).every(([key, f]) =>
            f.$eq !== undefined
              ? v.metadata[key] === f.$eq
              : f.$in!.includes(String(v.metadata[key])),
          ),
        )
        .map(([id, v]) => ({
          id,
          score: cosine(Array.from(vector as ArrayLike<number>), v.values),
          metadata: Object.fromEntries(
            Object.entries(v.metadata).filter(
              ([key]) =>
                asked?.returnMetadata === "all" ||
                (asked?.returnMetadata === "indexed" && indexed.includes(key)),
            ),
          ),
        }))
        .sort((x, y) => y.score - x.score)
        .slice(0, asked?.topK ?? 5);
      return { matches, count: matches.length };
    },
    upsert: async (records) => {
      calls.push({ method: "upsert", args: [records] });
      for (const r of records)
        vectors.set(r.id, {
          values: Array.from(r.values as ArrayLike<number>),
          namespace: r.namespace,
          metadata: (r.metadata ?? {}) as Record<string, VectorizeVectorMetadata>,
        });
      return { mutationId: String(calls.length) };
    },
    deleteByIds: async (ids) => {
      calls.push({ method: "delete", args: [ids] });
      for (const id of ids) vectors.delete(id);
      return { mutationId: String(calls.length) };
    },
  };
  return { binding, vectors, calls };
}
