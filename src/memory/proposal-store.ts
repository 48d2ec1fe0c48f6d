// Proposals in D1: what an agent asked to change about itself, waiting for a person's answer.
// Filing is idempotent by id (derived from the turn and the change, so a replayed turn files
// nothing new); deciding only moves a pending proposal, so two answers cannot both count. The
// change and its origin are JSON columns checked with zod on the way back.
import { and, desc, eq, lt } from "drizzle-orm";
import { z } from "zod";
import { SkillSchema } from "../characters/skills.ts";
import { SERVER_NAME } from "../mcp/registry.ts";
import type { Db } from "./db.ts";
import { readJsonColumn } from "./json-column.ts";
import { type PROPOSAL_STATUSES, proposals } from "./schema.ts";

export const MAX_REASON_CHARS = 500;

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

export interface ProposalStore {
  /** Stores a pending proposal; `created` is false when this id was filed before. */
  file(proposal: Omit<Proposal, "status" | "decidedAt" | "decidedBy">): Promise<{
    proposal: Proposal;
    created: boolean;
  }>;
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
    async file(proposal) {
      const inserted = await db
        .insert(proposals)
        .values({
          agentId: proposal.agentId,
          id: proposal.id,
          kind: proposal.change.kind,
          status: "pending",
          change: JSON.stringify(proposal.change),
          origin: JSON.stringify(proposal.origin),
          createdAt: proposal.createdAt,
        })
        .onConflictDoNothing()
        .returning();
      const row =
        inserted[0] ??
        (await db.select().from(proposals).where(byId(proposal.agentId, proposal.id)).get());
      if (!row) throw new Error(`proposal ${proposal.id} was neither stored nor found`);
      return { proposal: toProposal(row), created: inserted.length > 0 };
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
  };
}
