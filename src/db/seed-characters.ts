// A fresh deployment has agents to talk to: the characters shipped in characters/ are created as
// POST /agents would create them (lore, knowledge text), with the files their knowledge entries
// name stored as documents, the way `npm run seed` stores them. An agent that exists is left
// alone, so running it again changes nothing.
import { parseCharacter } from "../characters/parse-character.ts";
import type { ShippedCharacter } from "../characters/shipped-characters.ts";
import type { TokenCounter } from "../runtime/util/tokens.ts";
import { agentIdFor, type AgentStore } from "./stores/agent-store.ts";
import type { Db } from "./db.ts";
import type { EmbeddingPipeline } from "./memory/embedding-pipeline.ts";
import { characterKnowledge, ingestDocument } from "./memory/knowledge.ts";

export interface SeedDeps {
  agents: AgentStore;
  /** The database holding a (just created) agent's memories, and its embedding pipeline. */
  dataOf(agentId: string): Promise<{ db: Db; pipeline: EmbeddingPipeline }>;
  tokens: TokenCounter;
}

/** Creates the shipped characters that do not exist yet; returns the ids it created. */
export async function seedShippedCharacters(
  deps: SeedDeps,
  shipped: readonly ShippedCharacter[],
  now: number,
): Promise<string[]> {
  const created: string[] = [];
  for (const entry of shipped) {
    const agentId = agentIdFor(parseCharacter(entry.character));
    if ((await deps.agents.version(agentId)) !== null) continue;
    await deps.agents.create(entry.character, now, (id, character) =>
      characterKnowledge(deps.tokens, id, character, now),
    );
    const { db, pipeline } = await deps.dataOf(agentId);
    for (const file of entry.knowledgeFiles) {
      await ingestDocument(db, pipeline, deps.tokens, {
        agentId,
        ...file,
        source: "character",
        now,
      });
    }
    created.push(agentId);
  }
  return created;
}
