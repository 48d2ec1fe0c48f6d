// The agent's character as a read-only MCP resource, `agent://<agentId>/character` (JSON): what
// GET /agents/:agentId shows of it, so secret values are left out (only their names, in
// `secretNames`), by the same publicCharacter.
import type { ReadResourceResult } from "@modelcontextprotocol/server";
import { publicCharacter } from "../../../characters/parse-character.ts";
import { stores } from "../../../db/stores/index.ts";
import { authorize } from "../../../runtime/access/index.ts";
import { NotFoundError } from "../../../runtime/util/errors.ts";
import type { McpCallContext } from "./context.ts";

export const CHARACTER_MIME_TYPE = "application/json";

export function characterUri(agentId: string): string {
  return `agent://${agentId}/character`;
}

export async function readCharacter(ctx: McpCallContext): Promise<ReadResourceResult> {
  const { env, principal, agentId } = ctx;
  authorize(principal, "agent.read", { agentId });
  const record = await stores(env).agents.get(agentId);
  if (!record) throw new NotFoundError(`no agent with id "${agentId}"`);
  return {
    contents: [
      {
        uri: characterUri(agentId),
        mimeType: CHARACTER_MIME_TYPE,
        text: JSON.stringify(publicCharacter(record.character), null, 2),
      },
    ],
  };
}
