// Proposals, one way for an agent to ask for a change about itself: filing (from a tool, in any
// turn or task step; never waits for the answer) and deciding (the API, or a manager's click on
// Discord). Approving applies the change first (the skill is saved, the catalog server added),
// then marks the proposal, then bumps the agent's version so its rooms re-read skills and tools.
// An agent holds at most MAX_PENDING_PROPOSALS unanswered proposals; one unanswered for
// PENDING_PROPOSAL_TTL_MS has expired and can no longer be approved.
import type { AgentServerStore } from "../db/stores/agent-server-store.ts";
import type { AgentStore } from "../db/stores/agent-store.ts";
import type {
  Proposal,
  ProposalChange,
  ProposalOrigin,
  ProposalStore,
} from "../db/stores/proposal-store.ts";
import { MAX_PENDING_PROPOSALS, PENDING_PROPOSAL_TTL_MS } from "../db/stores/proposal-store.ts";
import type { SkillStore } from "../db/stores/skill-store.ts";
import type { McpServerConfig } from "../mcp-registry.ts";
import { ConflictError, NotFoundError } from "../runtime/util/errors.ts";
import { sha256Hex } from "../runtime/util/hashing.ts";
import { stableStringify } from "../runtime/util/stable-json.ts";

export interface ProposalDeskDeps {
  proposals: ProposalStore;
  skills: Pick<SkillStore, "put">;
  servers: Pick<AgentServerStore, "list" | "addFromCatalog">;
  agents: Pick<AgentStore, "get" | "touch">;
  /** The deployment's catalog of MCP servers (mcp-servers.json). */
  catalog: () => ReadonlyMap<string, McpServerConfig>;
  now: () => number;
}

export interface Decision {
  proposal: Proposal;
  /** What approving did, in words (for the API and Discord). */
  applied: string | null;
}

export interface ProposalDesk {
  file(
    agentId: string,
    change: ProposalChange,
    origin: ProposalOrigin,
  ): Promise<{ proposal: Proposal; created: boolean }>;
  /** Approves (applying the change) or denies a pending proposal. */
  decide(agentId: string, id: string, approve: boolean, by: string): Promise<Decision>;
}

export function createProposalDesk(deps: ProposalDeskDeps): ProposalDesk {
  return {
    async file(agentId, change, origin) {
      // The same change asked in the same turn is one proposal: a replayed turn files nothing new.
      const id = (
        await sha256Hex(`${agentId}\n${origin.turnId}\n${stableStringify(change)}`)
      ).slice(0, 16);
      const now = deps.now();
      const filed = await deps.proposals.file(
        { agentId, id, change, origin, createdAt: now },
        { max: MAX_PENDING_PROPOSALS, since: now - PENDING_PROPOSAL_TTL_MS },
      );
      if (!filed)
        throw new ConflictError(
          `agent "${agentId}" already has ${MAX_PENDING_PROPOSALS} proposals waiting for an ` +
            "answer, the most it may have, so nothing was proposed: a person must approve or deny " +
            `some first (GET /agents/${agentId}/proposals), or they expire after ` +
            `${PENDING_PROPOSAL_TTL_MS / 86_400_000} days`,
          { maxPendingProposals: MAX_PENDING_PROPOSALS },
        );
      return filed;
    },

    async decide(agentId, id, approve, by) {
      const current = await deps.proposals.get(agentId, id);
      if (!current) throw new NotFoundError(`agent "${agentId}" has no proposal "${id}"`);
      if (current.status !== "pending")
        throw new ConflictError(`proposal "${id}" was already ${current.status}`);
      // The hourly upkeep marks it expired; until then it is expired all the same.
      if (current.createdAt < deps.now() - PENDING_PROPOSAL_TTL_MS)
        throw new ConflictError(`proposal "${id}" was already expired`);
      const applied = approve ? await apply(deps, current) : null;
      const decided = await deps.proposals.decide(
        agentId,
        id,
        approve ? "approved" : "denied",
        by,
        deps.now(),
      );
      if (!decided) throw new ConflictError(`proposal "${id}" was decided by someone else`);
      // Rooms cache skills and servers by the agent's version.
      if (approve) await deps.agents.touch(agentId, deps.now());
      return { proposal: decided, applied };
    },
  };
}

async function apply(deps: ProposalDeskDeps, proposal: Proposal): Promise<string> {
  const { agentId, change } = proposal;
  if (change.kind === "skill") {
    const record = await deps.agents.get(agentId);
    if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
    if (record.character.settings.skills.some((skill) => skill.name === change.skill.name))
      throw new ConflictError(
        `the character defines a skill named "${change.skill.name}"; change it there (PUT /agents/${agentId})`,
      );
    const added = await deps.skills.put(agentId, change.skill, {
      source: "agent",
      proposalId: proposal.id,
      now: deps.now(),
    });
    return `skill "${change.skill.name}" ${added ? "saved" : "updated"}`;
  }
  // Never a server outside the catalog, even if the file changed since the proposal was filed.
  if (!deps.catalog().has(change.server))
    throw new ConflictError(`"${change.server}" is no longer in the MCP server catalog`);
  const added = await deps.servers.addFromCatalog(agentId, change.server, deps.now());
  return added
    ? `MCP server "${change.server}" added`
    : `MCP server "${change.server}" was already added`;
}
