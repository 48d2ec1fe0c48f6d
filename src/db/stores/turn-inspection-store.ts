// The turn inspector's records: one per replied turn, written by the room after the reply, read
// back by GET /agents/:agentId/turns/:turnId and pruned after TURN_INSPECTION_RETENTION_MS by the
// upkeep. D1 (turn_inspections) keeps the compact outline in the room's after-reply trip; the
// prompt's text and the tools' arguments and results go to R2 after it (turn-inspection-text.ts),
// for a share of turns (`textShare`, all by default). Losing that text never loses the record.
import { and, eq, lt } from "drizzle-orm";
import type { TurnInspectionSink } from "../../runtime/turn/turn-inspection.ts";
import { errorField, log } from "../../log.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { turnInspections } from "../schema.ts";
import { fnv1a32 } from "../../runtime/util/hashing.ts";
import {
  joinText,
  type KeptInspection,
  keptOf,
  splitInspection,
  StoredTurnInspectionShape,
  type TextPlace,
} from "./turn-inspection-shapes.ts";
import {
  deleteInspectionTexts,
  getInspectionText,
  inspectionTextKey,
  putInspectionText,
  sweepInspectionTexts,
} from "./turn-inspection-text.ts";

/** How long a turn stays inspectable: a week, enough to look into last days' odd replies. */
export const TURN_INSPECTION_RETENTION_MS = 7 * 86_400_000;

export interface TurnInspectionStoreOptions {
  /** Where the text goes (the MEDIA bucket). */
  bucket: R2Bucket;
  /** The share of turns whose text is kept, 0 to 1 (INSPECTOR_TEXT_SHARE; default 1). */
  textShare?: number;
}

export interface TurnInspectionStore extends TurnInspectionSink {
  /** The record from D1 alone: the outline, and the text only of a version-1 row. */
  get(agentId: string, turnId: string): Promise<KeptInspection | null>;
  /**
   * The record with its text from R2 (and the memories' references, for an outline that was too
   * large for D1), when it has one there; without, when it is gone.
   */
  withText(kept: KeptInspection): Promise<KeptInspection>;
  /** Deletes the records older than `before` (ms) and their text; returns how many went. */
  prune(before: number): Promise<number>;
}

export function createTurnInspectionStore(
  db: Db,
  { bucket, textShare = 1 }: TurnInspectionStoreOptions,
): TurnInspectionStore {
  const t = turnInspections;
  const row = (agentId: string, turnId: string) =>
    and(eq(t.agentId, agentId), eq(t.turnId, turnId));
  return {
    async record(inspection) {
      const place: TextPlace = sampled(inspection.turnId, textShare) ? "r2" : "none";
      const { record, text } = splitInspection(inspection, place);
      // Started before any await: it joins the reply's writes in the room's shared D1 trip.
      const inserted = await db
        .insert(t)
        .values({
          agentId: inspection.agentId,
          turnId: inspection.turnId,
          roomId: inspection.roomId,
          userId: inspection.userId,
          detail: JSON.stringify(record),
          createdAt: inspection.startedAt,
        })
        // A turn replayed after an eviction keeps its first record, and its first text.
        .onConflictDoNothing()
        .run();
      if (place === "none" || (inserted.meta.changes ?? 0) === 0) return;
      const key = inspectionTextKey(inspection.agentId, inspection.turnId, inspection.startedAt);
      try {
        await putInspectionText(
          bucket,
          key,
          text,
          inspection.startedAt + TURN_INSPECTION_RETENTION_MS,
        );
      } catch (error) {
        log.warn("inspection_text_not_stored", {
          agentId: inspection.agentId,
          turnId: inspection.turnId,
          error: errorField(error),
        });
        // The record stays, said to be without text (a reader finding no object says the same),
        // with its memories' references back in D1 if they had been moved to the text.
        const without = splitInspection(inspection, "none").record;
        await db
          .update(t)
          .set({ detail: JSON.stringify(without) })
          .where(row(inspection.agentId, inspection.turnId))
          .run()
          .catch(() => undefined);
      }
    },
    async get(agentId, turnId) {
      const found = await db.select({ detail: t.detail }).from(t).where(row(agentId, turnId)).get();
      if (!found) return null;
      const stored = readJsonColumn(
        StoredTurnInspectionShape,
        found.detail,
        `turn_inspections.detail of ${turnId}`,
      );
      return keptOf(stored);
    },
    async withText(kept) {
      if (kept.text !== "r2") return kept;
      const key = inspectionTextKey(kept.agentId, kept.turnId, kept.startedAt);
      const text = await getInspectionText(bucket, key).catch((error: unknown) => {
        log.warn("inspection_text_not_read", { turnId: kept.turnId, error: errorField(error) });
        return null;
      });
      return text ? joinText(kept, text) : { ...kept, text: "none", memoriesInText: false };
    },
    async prune(before) {
      const gone = await db
        .delete(t)
        .where(lt(t.createdAt, before))
        .returning({ agentId: t.agentId, turnId: t.turnId, createdAt: t.createdAt });
      // Then their text; what this misses (an R2 error, an agent deleted with its rows) goes
      // with the sweep of whole days past the retention.
      try {
        const keys = gone.map((r) => inspectionTextKey(r.agentId, r.turnId, r.createdAt));
        await deleteInspectionTexts(bucket, keys);
        await sweepInspectionTexts(bucket, before);
      } catch (error) {
        log.warn("inspection_text_not_pruned", { error: errorField(error) });
      }
      return gone.length;
    },
  };
}

/**
 * Whether a turn's text is kept: a fixed pick by its id (FNV-1a), so a replay picks the same,
 * and a share of 0.1 keeps about one turn in ten.
 */
function sampled(turnId: string, share: number): boolean {
  if (share >= 1) return true;
  if (share <= 0) return false;
  return fnv1a32(turnId) / 0x1_0000_0000 < share;
}
