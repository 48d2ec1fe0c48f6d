// The turn inspector's records in D1 (turn_inspections): one per replied turn, written by the
// room after the reply in the same shared trip as the reply and its usage record, read back by
// GET /agents/:agentId/turns/:turnId (checked with zod: a row of another shape is an error that
// names the row, never its content), and pruned after TURN_INSPECTION_RETENTION_MS by the upkeep.
import { and, eq, lt } from "drizzle-orm";
import { z } from "zod";
import type { TurnInspection, TurnInspectionSink } from "../../runtime/turn/turn-inspection.ts";
import { TURN_INSPECTION_VERSION } from "../../runtime/turn/turn-inspection.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { turnInspections } from "../schema.ts";

/** How long a turn stays inspectable: a week, enough to look into last days' odd replies. */
export const TURN_INSPECTION_RETENTION_MS = 7 * 86_400_000;

const MatchedByShape = z.array(z.enum(["text", "vector", "neighbour"]));

/** The record as src/runtime/turn/turn-inspection.ts writes it (version 1). */
export const TurnInspectionShape = z.object({
  version: z.literal(TURN_INSPECTION_VERSION),
  turnId: z.string(),
  agentId: z.string(),
  roomId: z.string(),
  userId: z.string(),
  startedAt: z.number(),
  durationMs: z.number(),
  resumed: z.boolean(),
  sections: z.array(z.object({ name: z.string(), tokens: z.number(), text: z.string() })),
  memories: z.array(
    z.object({
      id: z.string(),
      type: z.enum(["message", "fact", "description", "lore", "document", "fragment", "summary"]),
      score: z.number().nullable(),
      provider: z.string(),
      matchedBy: MatchedByShape.nullable(),
    }),
  ),
  tools: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      ok: z.boolean(),
      cached: z.boolean(),
      startMs: z.number().nullable(),
      durationMs: z.number(),
      arguments: z.unknown(),
      output: z.string(),
      model: z.string(),
    }),
  ),
  modelCalls: z.array(
    z.object({
      model: z.string(),
      responseModel: z.string().nullable(),
      startMs: z.number(),
      durationMs: z.number(),
      inputTokens: z.number(),
      outputTokens: z.number(),
      finishReason: z.string().nullable(),
      error: z.string().nullable(),
    }),
  ),
});

export interface TurnInspectionStore extends TurnInspectionSink {
  get(agentId: string, turnId: string): Promise<TurnInspection | null>;
  /** Deletes the records older than `before` (ms); returns how many went. */
  prune(before: number): Promise<number>;
}

export function createTurnInspectionStore(db: Db): TurnInspectionStore {
  const t = turnInspections;
  return {
    async record(inspection) {
      await db
        .insert(t)
        .values({
          agentId: inspection.agentId,
          turnId: inspection.turnId,
          roomId: inspection.roomId,
          userId: inspection.userId,
          detail: JSON.stringify(inspection),
          createdAt: inspection.startedAt,
        })
        // A turn replayed after an eviction keeps its first record.
        .onConflictDoNothing();
    },
    async get(agentId, turnId) {
      const row = await db
        .select({ detail: t.detail })
        .from(t)
        .where(and(eq(t.agentId, agentId), eq(t.turnId, turnId)))
        .get();
      if (!row) return null;
      return readJsonColumn(
        TurnInspectionShape,
        row.detail,
        `turn_inspections.detail of ${turnId}`,
      );
    },
    async prune(before) {
      const result = await db.delete(t).where(lt(t.createdAt, before)).run();
      return result.meta.changes ?? 0;
    },
  };
}
