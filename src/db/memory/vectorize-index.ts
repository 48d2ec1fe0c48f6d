// VectorIndex over Cloudflare Vectorize (V2): one namespace per agent, metadata type/roomId/userId
// for filters and memoryId to map hits back (their metadata indexes must exist before vectors are
// written; see docs/deploying.md), the dimension checked against the index before every write. Vectorize
// applies writes asynchronously: callers never rely on reading their own writes.
import { DimensionMismatchError } from "../../runtime/util/errors.ts";
import type {
  VectorIndex,
  VectorMatch,
  VectorQuery,
  VectorRecord,
} from "../../runtime/ports/vectors.ts";
import { log as logLine } from "../../log.ts";
import { sha256, toBase64Url } from "../../runtime/util/hashing.ts";

/** Vectorize's limits from a Worker: 1,000 vectors per upsert/delete, topK 100 without values. */
const MAX_WRITE = 1_000;
const MAX_TOP_K = 100;

/** The part of the Vectorize binding this uses, so tests can pass a recording fake. */
export type VectorizeBinding = Pick<Vectorize, "describe" | "query" | "upsert" | "deleteByIds">;

export interface VectorizeIndex extends VectorIndex {
  /** Deletes vectors by their Vectorize ids as written before migration 0013 (the memory ids). */
  deleteLegacy(vectorIds: string[]): Promise<void>;
}

/**
 * A memory's Vectorize id. Vectorize ids are unique across the whole index (namespaces do not
 * separate them) and at most 64 bytes, while memory ids are unique only within their agent: the
 * id is the SHA-256 of agent id, NUL and memory id, base64url (43 characters). The memory id
 * travels in the vector's metadata, and a hit counts only if its id is this hash of it. (A string
 * metadata index keeps 64 bytes: should a longer memory id come back cut, the hash check drops
 * the hit, and the memory is found by its text. The API's ids are at most 64 characters.)
 */
export async function vectorizeId(agentId: string, memoryId: string): Promise<string> {
  return toBase64Url(await sha256(`${agentId}\u0000${memoryId}`));
}

/** An old-scheme id that has the new scheme's shape is left alone: it may be a live new vector. */
const NEW_SCHEME_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export function createVectorizeIndex(
  binding: VectorizeBinding,
  log: (entry: Record<string, unknown>) => void = (entry) => logLine.warn(String(entry.msg), entry),
): VectorizeIndex {
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
  let warnedUnmapped = false;

  const deleteIds = async (ids: string[]) => {
    for (let i = 0; i < ids.length; i += MAX_WRITE)
      await binding.deleteByIds(ids.slice(i, i + MAX_WRITE));
  };

  return {
    kind: "vectorize",
    dimensions: indexDimensions,

    async upsert(records: VectorRecord[]) {
      for (const record of records)
        await check(record.values.length, `vector for memory ${record.id}`);
      const vectors = await Promise.all(
        records.map(async (record) => ({
          id: await vectorizeId(record.metadata.agentId, record.id),
          values: record.values,
          namespace: record.metadata.agentId,
          metadata: {
            memoryId: record.id,
            type: record.metadata.type,
            ...(record.metadata.roomId !== null ? { roomId: record.metadata.roomId } : {}),
            ...(record.metadata.userId !== null ? { userId: record.metadata.userId } : {}),
          },
        })),
      );
      for (let i = 0; i < vectors.length; i += MAX_WRITE)
        await binding.upsert(vectors.slice(i, i + MAX_WRITE));
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
        // Indexed metadata keeps topK at 100 (all metadata would cap it at 20); memoryId is indexed.
        returnMetadata: "indexed",
        ...(Object.keys(filter).length > 0 ? { filter } : {}),
      });
      const matches: VectorMatch[] = [];
      let unmapped = 0;
      for (const match of result.matches) {
        const memoryId = match.metadata?.memoryId;
        // Old-scheme vectors (no memoryId) and any id that is not this agent's hash of the memory
        // id (a truncated or foreign value) are no match: a hit maps only to the agent's own memory.
        if (
          typeof memoryId === "string" &&
          (await vectorizeId(query.agentId, memoryId)) === match.id
        )
          matches.push({ id: memoryId, score: match.score });
        else unmapped++;
      }
      if (unmapped > 0 && matches.length === 0 && !warnedUnmapped) {
        warnedUnmapped = true;
        log({
          level: "warn",
          msg: "vectorize_hits_unmapped",
          agentId: query.agentId,
          unmapped,
          hint: "create the memoryId metadata index, then npm run memory -- init (docs/deploying.md)",
        });
      }
      return matches;
    },

    async delete(agentId: string, ids: string[]) {
      await deleteIds(await Promise.all(ids.map((id) => vectorizeId(agentId, id))));
    },

    async deleteLegacy(vectorIds: string[]) {
      await deleteIds(vectorIds.filter((id) => !NEW_SCHEME_SHAPE.test(id)));
    },
  };
}
