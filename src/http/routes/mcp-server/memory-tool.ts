// The `search_memories` tool: the memory API's search (POST /memories/similar, the runtime's hybrid
// retrieval) on the URL's agent, under the same rule: a token with a user prefix names one of its
// users in `userId`, since without one the answer would span every user of the agent.
import type { CallToolResult } from "@modelcontextprotocol/server";
import { z } from "zod";
import { authorize } from "../../../runtime/access/index.ts";
import { EXTERNAL_ID } from "../../schemas.ts";
import { MAX_MEMORY_TEXT_CHARS, searchMemories } from "../memories.ts";
import type { McpCallContext } from "./context.ts";

const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;

export const SearchMemoriesInput = z.strictObject({
  query: z
    .string()
    .trim()
    .min(1, "must not be empty")
    .max(MAX_MEMORY_TEXT_CHARS)
    .describe("What to look for (full text and meaning)"),
  limit: z
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .optional()
    .describe(`How many memories at most (default ${DEFAULT_LIMIT})`),
  userId: z
    .string()
    .regex(EXTERNAL_ID, "1-128 letters, digits or . _ : @ -, starting with a letter or digit")
    .optional()
    .describe("Only this user's memories (required for a token with a user prefix)"),
});

export const SearchMemoriesOutput = z.object({
  memories: z.array(
    z.object({
      id: z.string(),
      type: z.string(),
      text: z.string(),
      userId: z.string().nullable(),
      roomId: z.string().nullable(),
      createdAt: z.number(),
      score: z.number().describe("Fused rank score, 0..1"),
    }),
  ),
});

export async function searchMemoriesTool(
  ctx: McpCallContext,
  args: z.infer<typeof SearchMemoriesInput>,
): Promise<CallToolResult> {
  const { env, principal, agentId } = ctx;
  authorize(principal, "memory.read", { agentId, userId: args.userId, spansUsers: true });
  const found = await searchMemories(env, {
    agentId,
    text: args.query,
    userId: args.userId,
    limit: args.limit ?? DEFAULT_LIMIT,
  });
  const memories = found.map((m) => ({
    id: m.id,
    type: m.type,
    text: m.text,
    userId: m.userId,
    roomId: m.roomId,
    createdAt: m.createdAt,
    score: m.score,
  }));
  const lines = memories.map((m, i) => `${i + 1}. [${m.type}] ${m.text}`);
  return {
    content: [{ type: "text", text: lines.length > 0 ? lines.join("\n") : "No memories found." }],
    structuredContent: { memories },
  };
}
