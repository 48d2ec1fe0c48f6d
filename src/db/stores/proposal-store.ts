// Proposals in D1: what an agent asked to change about itself, waiting for a person's answer.
// Filing is idempotent by id (derived from the turn and the change, so a replayed turn files
// nothing new) and capped: an agent holds at most MAX_PENDING_PROPOSALS unanswered ones, counted
// in the insert itself. Deciding only moves a pending proposal, so two answers cannot both count.
// Unanswered ones expire; answered and expired ones are deleted after a while (the hourly upkeep,
// maintenance.ts). The change and its origin are JSON columns checked with zod on the way back.
import { and, desc, eq, lt, ne, sql } from "drizzle-orm";
import { z } from "zod";
import { SkillSchema } from "../../characters/skills.ts";
import { SERVER_NAME } from "../../mcp-registry.ts";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { type PROPOSAL_STATUSES, proposals } from "../schema.ts";

export const MAX_REASON_CHARS = 500;

const DAY_MS = 86_400_000;
/**
 * Unanswered proposals an agent may hold at once. Anyone who can talk to the agent can make it
 * propose, and each proposal may post Approve / Deny buttons: past this, filing is refused until
 * a person answers some or they expire.
 */
export const MAX_PENDING_PROPOSALS = 20;
/** A proposal nobody answered within this expires: it no longer counts and cannot be approved. */
export const PENDING_PROPOSAL_TTL_MS = 14 * DAY_MS;
/** Answered and expired proposals are deleted this long after their answer (or expiry). */
export const DECIDED_PROPOSAL_RETENTION_MS = 90 * DAY_MS;

export const ProposalChange = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("skill"), skill: SkillSchema }),
  z.strictObject({
    kind: z.literal("tool"),
    server: z.string().regex(SERVER_NAME),
    reason: z.string().max(MAX_REASON_CHARS),
  }),
]);
export type ProposalChange = z.infer<typeof ProposalChange>;

/** Where the agent asked: the surface, room, person (or task) and turn (or task step). */
export const ProposalOrigin = z.strictObject({
  surface: z.string().max(32),
  roomId: z.string().max(300),
  userId: z.string().max(300),
  turnId: z.string().max(300),
});
export type ProposalOrigin = z.infer<typeof ProposalOrigin>;

export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

export interface Proposal {
  agentId: string;
  id: string;
  change: ProposalChange;
  origin: ProposalOrigin;
  status: ProposalStatus;
  createdAt: number;
  decidedAt: number | null;
  decidedBy: string | null;
}

/** How many pending proposals may be there already: those filed at or after `since` count. */
export interface PendingCap {
  max: number;
  since: number;
}

export interface ProposalStore {
  /**
   * Stores a pending proposal; `created` is false when this id was filed before. Null when the
   * agent already holds `cap.max` pending proposals (and this id was not one of them).
   */
  file(
    proposal: Omit<Proposal, "status" | "decidedAt" | "decidedBy">,
    cap: PendingCap,
  ): Promise<{ proposal: Proposal; created: boolean } | null>;
  get(agentId: string, id: string): Promise<Proposal | null>;
  /** Newest first; `before` is a createdAt cursor. */
  list(
    agentId: string,
    query: { status?: ProposalStatus; limit: number; before?: number },
  ): Promise<Proposal[]>;
  /** pending -> approved/denied; null when it was not pending (already decided, or gone). */
  decide(
    agentId: string,
    id: string,
    status: Exclude<ProposalStatus, "pending">,
    by: string,
    now: number,
  ): Promise<Proposal | null>;
  /** pending -> expired for every agent's proposals filed before `before`; how many. */
  expirePending(before: number, now: number): Promise<number>;
  /** Deletes answered and expired proposals decided before `before`; how many. */
  deleteDecided(before: number): Promise<number>;
}

export function createProposalStore(db: Db): ProposalStore {
  const toProposal = (row: typeof proposals.$inferSelect): Proposal => {
    const where = `proposals row ${row.agentId}/${row.id}`;
    return {
      agentId: row.agentId,
      id: row.id,
      change: readJsonColumn(ProposalChange, row.change, `${where} change`),
      origin: readJsonColumn(ProposalOrigin, row.origin, `${where} origin`),
      status: row.status,
      createdAt: row.createdAt,
      decidedAt: row.decidedAt,
      decidedBy: row.decidedBy,
    };
  };
  const byId = (agentId: string, id: string) =>
    and(eq(proposals.agentId, agentId), eq(proposals.id, id));
  return {
    async file(proposal, cap) {
      const { agentId, id, change, origin, createdAt } = proposal;
      // One statement counts and inserts, so filings racing from several rooms cannot pass the
      // cap together (D1 runs a statement alone). SQLite needs the WHERE for an upsert after a
      // SELECT. The column list is spelled out: drizzle's insert-from-select takes every column.
      const inserted = await db.run(sql`
        INSERT INTO proposals (agent_id, id, kind, status, change, origin, created_at)
        SELECT ${agentId}, ${id}, ${change.kind}, 'pending', ${JSON.stringify(change)},
          ${JSON.stringify(origin)}, ${createdAt}
        WHERE (
          SELECT count(*) FROM proposals
          WHERE agent_id = ${agentId} AND status = 'pending' AND created_at >= ${cap.since}
        ) < ${cap.max}
        ON CONFLICT DO NOTHING`);
      if (inserted.meta.changes > 0) {
        const filed: Proposal = {
          ...proposal,
          status: "pending",
          decidedAt: null,
          decidedBy: null,
        };
        return { proposal: filed, created: true };
      }
      const row = await db.select().from(proposals).where(byId(agentId, id)).get();
      return row ? { proposal: toProposal(row), created: false } : null;
    },
    async get(agentId, id) {
      const row = await db.select().from(proposals).where(byId(agentId, id)).get();
      return row ? toProposal(row) : null;
    },
    async list(agentId, query) {
      const rows = await db
        .select()
        .from(proposals)
        .where(
          and(
            eq(proposals.agentId, agentId),
            query.status ? eq(proposals.status, query.status) : undefined,
            query.before !== undefined ? lt(proposals.createdAt, query.before) : undefined,
          ),
        )
        .orderBy(desc(proposals.createdAt), desc(proposals.id))
        .limit(query.limit);
      return rows.map(toProposal);
    },
    async decide(agentId, id, status, by, now) {
      const updated = await db
        .update(proposals)
        .set({ status, decidedAt: now, decidedBy: by })
        .where(and(byId(agentId, id), eq(proposals.status, "pending")))
        .returning();
      return updated[0] ? toProposal(updated[0]) : null;
    },
    async expirePending(before, now) {
      const result = await db
        .update(proposals)
        .set({ status: "expired", decidedAt: now, decidedBy: null })
        .where(and(eq(proposals.status, "pending"), lt(proposals.createdAt, before)))
        .run();
      return result.meta.changes;
    },
    async deleteDecided(before) {
      const result = await db
        .delete(proposals)
        .where(and(ne(proposals.status, "pending"), lt(proposals.decidedAt, before)))
        .run();
      return result.meta.changes;
    },
  };
}
