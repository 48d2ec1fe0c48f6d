// What the host offers plugins besides the basics of their context: each service is bound to the
// one agent (and its character as of this turn), so a plugin cannot reach another agent's data.
// Implemented by src/plugins/host-services.ts over the D1 stores; tests may pass their own.
import type { Skill } from "../characters/skills.ts";
import type { MediaPostStore } from "../db/stores/post-store.ts";
import type { Proposal, ProposalChange } from "../db/stores/proposal-store.ts";
import type { TurnOrigin } from "../objects/shared/turn-origin.ts";

/** Where a turn or task step came from, and how to show a new proposal there: the rooms' port. */
export type { TurnOrigin } from "../objects/shared/turn-origin.ts";

export interface SkillEntry extends Skill {
  /** `character` (settings.skills), `api` or `agent` (an approved proposal). */
  source: "character" | "api" | "agent";
}

export interface AgentSkills {
  /** The character's skills, then those added later, by name. */
  list(): Promise<SkillEntry[]>;
  get(name: string): Promise<SkillEntry | null>;
}

export interface FiledProposal {
  proposal: Proposal;
  /** False when this turn filed the same change before (a replayed turn). */
  created: boolean;
}

export interface ProposalFiling {
  /**
   * Files a change for a person to approve; with `autoApprove` it is approved (and applied) at
   * once. Never waits for the answer: the agent is told the proposal is pending.
   */
  file(
    change: ProposalChange,
    where: { roomId: string; userId: string; turnId: string; origin: TurnOrigin },
    options?: { autoApprove?: boolean },
  ): Promise<FiledProposal>;
}

export interface CatalogServer {
  name: string;
  description: string | null;
}

export interface AgentCatalog {
  /** Servers of the deployment's catalog (mcp-servers.json) the agent does not use yet. */
  requestable(): Promise<CatalogServer[]>;
  /** Whether the catalog has this server at all. */
  has(name: string): boolean;
}

/** Instagram publishing for the agent, when the deployment has it configured. */
export interface InstagramPublishing {
  posts: Pick<MediaPostStore, "get" | "save">;
  startPublishing(postId: string): Promise<void>;
}

export interface PluginServices {
  instagram: InstagramPublishing | null;
  skills: AgentSkills;
  proposals: ProposalFiling;
  catalog: AgentCatalog;
}
