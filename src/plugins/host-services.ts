// The services plugins get (plugin-services.ts), over the D1 stores, bound to one agent and the
// character of its current version: reads (skills, the agent's servers) are made once per
// version and isolate, since every change to them bumps it. Filing a proposal announces it where the turn
// came from, once, and only while it is still pending.
import type { AgentServerStore } from "../db/stores/agent-server-store.ts";
import type { SkillStore } from "../db/stores/skill-store.ts";
import { errorField, log } from "../log.ts";
import { agentServersOf } from "../mcp/agent-servers.ts";
import type { Registry } from "../mcp-registry.ts";
import type { Character } from "../runtime/character.ts";
import { readOncePer } from "../runtime/util/per-character.ts";
import type { ProposalDesk } from "./proposal-desk.ts";
import type {
  CatalogServer,
  InstagramPublishing,
  PluginServices,
  SkillEntry,
} from "./plugin-services.ts";

export interface HostServicesDeps {
  agentId: string;
  skills: Pick<SkillStore, "list">;
  servers: Pick<AgentServerStore, "list">;
  desk: ProposalDesk;
  catalog: () => Pick<Registry, "servers" | "descriptions">;
  instagram: InstagramPublishing | null;
}

/** Services for one agent; the same object (and cached reads) for the same character object. */
export function createHostServices(
  deps: HostServicesDeps,
): (character: Character) => PluginServices {
  const built = new WeakMap<Character, PluginServices>();
  return (character) => {
    let services = built.get(character);
    if (!services) {
      services = bind(deps, character);
      built.set(character, services);
    }
    return services;
  };
}

/**
 * Reads made for a character, shared by every object of the isolate: characters are shared per
 * isolate and version (src/objects/shared/character-source.ts), so a new room of an agent finds its skills
 * already read (its servers: src/mcp/agent-servers.ts; both through src/runtime/util/per-character.ts).
 */
const skillsByCharacter = new WeakMap<Character, Promise<SkillEntry[]>>();

function bind(deps: HostServicesDeps, character: Character): PluginServices {
  const { agentId } = deps;
  const listSkills = () =>
    readOncePer(skillsByCharacter, character, () =>
      deps.skills
        .list(agentId)
        .then((stored) => [
          ...character.settings.skills.map((skill) => ({ ...skill, source: "character" as const })),
          ...stored
            .filter((skill) => !character.settings.skills.some((own) => own.name === skill.name))
            .map(({ name, description, body, source }) => ({ name, description, body, source })),
        ]),
    );
  const usedServers = () =>
    agentServersOf(character, () => deps.servers.list(agentId)).then(
      (own) => new Set([...character.settings.mcpServers, ...own.map((s) => s.name)]),
    );
  return {
    instagram: deps.instagram,
    skills: {
      list: listSkills,
      async get(name) {
        return (await listSkills()).find((skill) => skill.name === name) ?? null;
      },
    },
    catalog: {
      async requestable() {
        const { servers: catalog, descriptions } = deps.catalog();
        if (catalog.size === 0) return [];
        const used = await usedServers();
        return [...catalog.keys()]
          .filter((name) => !used.has(name))
          .sort()
          .map((name): CatalogServer => ({ name, description: descriptions.get(name) ?? null }));
      },
      has: (name) => deps.catalog().servers.has(name),
    },
    proposals: {
      async file(change, where, options = {}) {
        const filed = await deps.desk.file(agentId, change, {
          surface: where.origin.surface,
          roomId: where.roomId,
          userId: where.userId,
          turnId: where.turnId,
        });
        if (!filed.created) return filed;
        if (options.autoApprove) {
          const decided = await deps.desk.decide(agentId, filed.proposal.id, true, "settings");
          return { proposal: decided.proposal, created: true };
        }
        if (where.origin.announce) {
          try {
            await where.origin.announce(filed.proposal, character.name);
          } catch (error) {
            // The proposal is listed by the API either way; the post is a convenience.
            log.warn("proposal_announce_failed", {
              agentId,
              proposalId: filed.proposal.id,
              error: errorField(error),
            });
          }
        }
        return filed;
      },
    },
  };
}
