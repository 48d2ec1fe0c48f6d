// Gives memories their vectors, off the reply path: a room's queue (after a turn), the memory and
// knowledge APIs (inline, in batches) and the cron sweep all come through here. A memory is marked
// embedded only after its vector is written, so a failure leaves it pending (still found by
// text) for the next run. Also removes the vectors of deleted memories from Vectorize, and the
// vectors written there under old, global ids before migration 0013 (their memories were made
// pending again by that migration, so embedding them writes their new vectors).
import { DimensionMismatchError } from "../../runtime/util/errors.ts";
import type { Memory } from "../../runtime/ports/memory.ts";
import type { Embedder, VectorIndex } from "../../runtime/ports/vectors.ts";
import type { Db } from "../db.ts";
import { markEmbedded, pendingEmbeddings } from "./memory-repo.ts";
import {
  byAgent,
  clearLegacyVectorIds,
  clearVectorDeletions,
  takeLegacyVectorIds,
  takeVectorDeletions,
} from "./vector-outbox.ts";

/** OpenAI's input limit is 8,191 tokens; four characters a token is a safe bound. */
const MAX_EMBED_CHARS = 24_000;
/** Vectorize takes at most 1,000 ids per delete. */
const DELETIONS_PER_SWEEP = 1_000;

export interface EmbeddingPipeline {
  /** Embeds the given memories now (documents are skipped). Returns how many got a vector. */
  embed(items: Memory[]): Promise<number>;
  /**
   * Embeds up to `maxBatches` batches of an agent's (or one room's) pending memories, after
   * removing the agent's old-scheme vectors (what `npm run memory -- init` runs after an upgrade).
   */
  embedPending(query: {
    agentId: string;
    roomId?: string;
    maxBatches?: number;
    /**
     * Only what costs no call (vectors the embedder holds, such as a turn's message, embedded as
     * its query); the rest is handed to the embedder to ride along with its next call and stays
     * pending (`deferred`) for a later pass. For the pass right after a turn.
     */
    knownOnly?: boolean;
  }): Promise<{ embedded: number; pending: boolean; deferred?: number }>;
  /** Removes vectors of deleted memories, and old-scheme vectors, from the index. Returns how many. */
  sweepDeletions(): Promise<number>;
  /** Throws DimensionMismatchError when the embedder does not fit the index. */
  checkDimensions(): Promise<void>;
}

export interface EmbeddingPipelineOptions {
  db: Db;
  embedder: Embedder;
  index: VectorIndex;
  now: () => number;
  /** Deletes vectors by their pre-0013 ids (Vectorize); absent for the local index, which has none. */
  deleteLegacyVectors?: (vectorIds: string[]) => Promise<void>;
}

export function createEmbeddingPipeline(options: EmbeddingPipelineOptions): EmbeddingPipeline {
  const { db, embedder, index } = options;
  let checked = false;

  const checkDimensions = async () => {
    await embedder.ready?.();
    const expected = await index.dimensions();
    if (expected !== null && expected !== embedder.dimensions) {
      throw new DimensionMismatchError({
        expected,
        actual: embedder.dimensions,
        where: `${index.kind} index vs ${embedder.id}`,
      });
    }
    checked = true;
  };

  const embed = async (items: Memory[]): Promise<number> => {
    const embeddable = items.filter((m) => m.type !== "document");
    if (embeddable.length === 0) return 0;
    if (!checked) await checkDimensions();
    let done = 0;
    for (let i = 0; i < embeddable.length; i += embedder.maxBatch) {
      const batch = embeddable.slice(i, i + embedder.maxBatch);
      const vectors = await embedder.embed(batch.map(embeddingText));
      const records = batch.map((memory, j) => ({
        id: memory.id,
        values: vectors[j]!,
        metadata: {
          agentId: memory.agentId,
          type: memory.type,
          roomId: memory.roomId,
          userId: memory.userId,
        },
      }));
      // The index re-checks every vector's length and refuses the whole batch on a mismatch. One
      // kept in D1 marks the memories embedded in the same transaction; otherwise that follows.
      if (index.upsertEmbedded) await index.upsertEmbedded(records, options.now());
      else {
        await index.upsert(records);
        // Grouped by agent: markEmbedded is scoped to one.
        for (const [agentId, ids] of byAgent(
          batch.map((memory) => ({ agentId: memory.agentId, memoryId: memory.id })),
        )) {
          await markEmbedded(db, agentId, ids, options.now());
        }
      }
      done += batch.length;
    }
    return done;
  };

  /**
   * Deletes old-scheme vectors (of one agent, or all), then forgets them. Idempotent: an id deleted
   * and not yet forgotten (a failure in between) is deleted again next time, which is harmless.
   */
  const sweepLegacy = async (agentId?: string): Promise<number> => {
    let removed = 0;
    for (;;) {
      const ids = await takeLegacyVectorIds(db, { agentId, limit: DELETIONS_PER_SWEEP });
      if (ids.length === 0) return removed;
      await options.deleteLegacyVectors?.(ids);
      await clearLegacyVectorIds(db, ids);
      removed += ids.length;
      if (ids.length < DELETIONS_PER_SWEEP) return removed;
    }
  };

  return {
    embed,
    checkDimensions,

    async embedPending({ agentId, roomId, maxBatches = 10, knownOnly = false }) {
      // The local embedder costs no call, so nothing is saved by waiting: it embeds everything now.
      if (knownOnly && embedder.kind !== "local" && embedder.known && embedder.later) {
        // Documents are never pending: the read leaves them out.
        const known: Memory[] = [];
        const waiting: string[] = [];
        for (const memory of await pendingEmbeddings(db, {
          agentId,
          roomId,
          limit: embedder.maxBatch,
        })) {
          const text = embeddingText(memory);
          if (embedder.known(text)) known.push(memory);
          else waiting.push(text);
        }
        embedder.later(waiting);
        const embedded = await embed(known);
        return { embedded, pending: waiting.length > 0, deferred: waiting.length };
      }
      if (roomId === undefined) await sweepLegacy(agentId);
      let embedded = 0;
      for (let round = 0; round < maxBatches; round++) {
        const batch = await pendingEmbeddings(db, { agentId, roomId, limit: embedder.maxBatch });
        if (batch.length === 0) return { embedded, pending: false };
        embedded += await embed(batch);
        if (batch.length < embedder.maxBatch) return { embedded, pending: false };
      }
      return { embedded, pending: true };
    },

    async sweepDeletions() {
      let removed = await sweepLegacy();
      for (;;) {
        const batch = await takeVectorDeletions(db, DELETIONS_PER_SWEEP);
        if (batch.length === 0) return removed;
        for (const [agentId, ids] of byAgent(batch)) await index.delete(agentId, ids);
        await clearVectorDeletions(db, batch);
        removed += batch.length;
        if (batch.length < DELETIONS_PER_SWEEP) return removed;
      }
    },
  };
}

/**
 * What is embedded for a memory: its text, and for a fragment the section it sits in. A message is
 * embedded as its words alone, as a query is, so a turn's stored message takes the vector its
 * query already got (recent-vectors.ts): one embedding call saved per turn. The speaker's name
 * used to lead the text; on the LoCoMo development set (`npm run bench:memory`, offline embedder)
 * dropping it moved R@5 / R@10 / R@25 from 54.3 / 70.5 / 80.4 to 55.5 / 70.5 / 80.5. Vectors
 * written before keep their name until re-embedded; both kinds are found.
 */
export function embeddingText(memory: Memory): string {
  const heading =
    typeof memory.metadata.heading === "string" && memory.metadata.heading
      ? `${memory.metadata.heading}\n`
      : "";
  return `${heading}${memory.content.text}`.slice(0, MAX_EMBED_CHARS);
}
