// VectorIndex over Cloudflare Vectorize (V2): one namespace per agent, metadata type/roomId/userId
// for filters (their metadata indexes must exist before vectors are written; see README), the
// dimension checked against the index before every write. Vectorize applies writes
// asynchronously: callers never rely on reading their own writes.
import { DimensionMismatchError } from "../runtime/errors.ts";
import type { VectorIndex, VectorQuery, VectorRecord } from "../runtime/types.ts";

/** Vectorize's limits from a Worker: 1,000 vectors per upsert/delete, topK 100 without values. */
const MAX_WRITE = 1_000;
const MAX_TOP_K = 100;

/** The part of the Vectorize binding this uses, so tests can pass a recording fake. */
export type VectorizeBinding = Pick<Vectorize, "describe" | "query" | "upsert" | "deleteByIds">;

export function createVectorizeIndex(binding: VectorizeBinding): VectorIndex {
  let dimensions: Promise<number> | null = null;
  const indexDimensions = () => {
    dimensions ??= binding.describe().then((info) => info.dimensions);
    // A failed describe is retried on the next call rather than cached.
    dimensions.catch(() => (dimensions = null));
    return dimensions;
  };
  const check = async (length: number, where: string) => {
    const expected = await indexDimensions();
    if (length !== expected) throw new DimensionMismatchError({ expected, actual: length, where });
  };

  return {
    kind: "vectorize",
    dimensions: indexDimensions,

    async upsert(records: VectorRecord[]) {
      for (const record of records) await check(record.values.length, `vector for memory ${record.id}`);
      for (let i = 0; i < records.length; i += MAX_WRITE) {
        await binding.upsert(
          records.slice(i, i + MAX_WRITE).map((record) => ({
            id: record.id,
            values: record.values,
            namespace: record.metadata.agentId,
            metadata: {
              type: record.metadata.type,
              ...(record.metadata.roomId !== null ? { roomId: record.metadata.roomId } : {}),
              ...(record.metadata.userId !== null ? { userId: record.metadata.userId } : {}),
            },
          })),
        );
      }
    },

    async query(query: VectorQuery) {
      await check(query.vector.length, "query vector");
      const filter: VectorizeVectorMetadataFilter = {};
      if (query.types && query.types.length === 1) filter.type = { $eq: query.types[0]! };
      else if (query.types && query.types.length > 1) filter.type = { $in: query.types };
      if (query.roomId !== undefined) filter.roomId = { $eq: query.roomId };
      if (query.userId !== undefined) filter.userId = { $eq: query.userId };
      const result = await binding.query(query.vector, {
        topK: Math.min(MAX_TOP_K, Math.max(1, query.topK)),
        namespace: query.agentId,
        returnValues: false,
        returnMetadata: "none",
        ...(Object.keys(filter).length > 0 ? { filter } : {}),
      });
      return result.matches.map((match) => ({ id: match.id, score: match.score }));
    },

    async delete(_agentId: string, ids: string[]) {
      // Ids are unique across namespaces (memory ids are global), so no namespace is needed.
      for (let i = 0; i < ids.length; i += MAX_WRITE) await binding.deleteByIds(ids.slice(i, i + MAX_WRITE));
    },
  };
}
