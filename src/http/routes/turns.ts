// The turn inspector: GET /agents/:agentId/turns/:turnId, what a replied turn kept (its prompt's
// sections with their token counts, the memories used and which search legs found them, tool
// calls, model timing), read from D1 and its text from R2 (src/db/stores/turn-inspection-store.ts).
// Who sees what is decided by `turn.read` in src/runtime/access/: a prefix token gets its own
// users' turns in outline (another user's turn is a 404, as if it did not exist); the prompt's
// text and the tools' arguments and results (the person's facts and history are in them) go to
// the admin token and to tokens without a prefix that hold `memories:read`; memories need
// `memories:read`, each also passing the rule for the memory's own user and room.
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { guard, hasScope } from "../auth.ts";
import { assertAgentExists } from "../known-agents.ts";
import { mayBeShownMemory } from "../namespaces.ts";
import { agentData } from "../../db/stores/index.ts";
import { TURN_INSPECTION_RETENTION_MS } from "../../db/stores/turn-inspection-store.ts";
import { memoriesByIds } from "../../db/memory/memory-repo.ts";
import { authorize, decide } from "../../runtime/access/authorize.ts";
import { usedMemory } from "../../runtime/context/memory-providers.ts";
import { replyMessageId } from "../../runtime/turn/message-ids.ts";
import type { KeptInspection } from "../../db/stores/turn-inspection-shapes.ts";
import { NotFoundError } from "../../runtime/util/errors.ts";
import { AgentIdParam, errorContent, EXTERNAL_ID } from "../schemas.ts";

const RETENTION_DAYS = TURN_INSPECTION_RETENTION_MS / 86_400_000;

const TurnIdParam = z
  .string()
  .regex(EXTERNAL_ID, "turn ids are 1-128 letters, digits or . _ : @ -")
  .openapi({
    param: { name: "turnId", in: "path" },
    example: "5f0c9a1e-7d3b-4c2a-9e61-0a4b8c2d1f37",
  });

const Section = z.object({
  name: z.string().openapi({
    description:
      "The provider that wrote it (character, time, user-facts, knowledge, recall, tools, history, a plugin's) or `message`, the person's own",
  }),
  tokens: z.number().int(),
  text: z.string().optional().openapi({
    description:
      "Only for the admin token and tokens with `memories:read` and without a user prefix",
  }),
});

const InspectedMemory = z.object({
  id: z.string(),
  type: z.string(),
  text: z.string().openapi({ description: "As the memory is now (first 500 characters)" }),
  score: z
    .number()
    .nullable()
    .openapi({ description: "Fused rank score; null for the person's facts" }),
  provider: z.string(),
  matchedBy: z
    .array(z.enum(["text", "vector", "neighbour"]))
    .nullable()
    .openapi({
      description:
        "The searches that found it: full-text, vector, or next to a hit in its room; null when not searched (the person's facts)",
    }),
});

const InspectedTool = z.object({
  id: z.string(),
  name: z.string(),
  ok: z.boolean(),
  cached: z.boolean(),
  startMs: z.number().nullable().openapi({
    description: "From the turn's start; null for a call made before an approval's pause",
  }),
  durationMs: z.number(),
  model: z.string(),
  arguments: z.unknown().optional().openapi({ description: "As `text` of a section" }),
  output: z
    .string()
    .optional()
    .openapi({ description: "As `text` of a section; cut to 2,000 characters" }),
});

const ModelCall = z.object({
  model: z.string(),
  responseModel: z.string().nullable(),
  startMs: z.number().openapi({ description: "From the turn's start" }),
  durationMs: z.number(),
  inputTokens: z.number().int(),
  cachedInputTokens: z.number().int().openapi({
    description: "Of inputTokens, read from the provider's prompt cache (0 when it did not say)",
  }),
  outputTokens: z.number().int(),
  finishReason: z.string().nullable(),
  error: z.string().nullable(),
});

const TurnInspectionView = z
  .object({
    turnId: z.string(),
    agentId: z.string(),
    roomId: z.string(),
    userId: z.string(),
    startedAt: z.number().int(),
    durationMs: z.number(),
    resumed: z.boolean().openapi({
      description: "Resumed after an approval: the prompt was composed before and is not kept",
    }),
    content: z.boolean().openapi({
      description:
        "Whether the prompt's text and the tools' arguments and results are shown (a turn whose text was not kept, by INSPECTOR_TEXT_SHARE or a failed write, has none to show)",
    }),
    sections: z.array(Section),
    memories: z.array(InspectedMemory).optional().openapi({
      description:
        "Only with `memories:read`; a memory deleted since, or of a user or room this token may not name, is left out",
    }),
    tools: z.array(InspectedTool),
    modelCalls: z.array(ModelCall),
  })
  .openapi("TurnInspection");

type View = z.infer<typeof TurnInspectionView>;

export function turnRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/turns/{turnId}",
      summary:
        "What a replied turn's prompt held, the memories and tools it used, its model timing",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam, turnId: TurnIdParam }) },
      responses: {
        200: {
          description: `The turn as it was kept (for ${RETENTION_DAYS} days)`,
          content: { "application/json": { schema: TurnInspectionView } },
        },
        403: errorContent("The token may not read this agent"),
        404: errorContent(
          "No such agent or turn, a turn of another tenant's user, or a turn not kept (older than the retention, or from before turns were kept)",
        ),
      },
    }),
    async (c) => {
      const { agentId, turnId } = c.req.valid("param");
      const principal = c.get("principal");
      authorize(principal, "agent.read", { agentId });
      await assertAgentExists(c.env, agentId);
      const { inspections, db } = await agentData(c.env, agentId);
      const kept = await inspections.get(agentId, turnId);
      const own = (userId: string | null) =>
        userId !== null && decide(principal, "turn.read", { agentId, turnUserId: userId }).allowed;
      if (!kept) {
        // Said plainly when the reply is there (and the caller's to see): the turn was not kept.
        const [reply] = await memoriesByIds(db, agentId, [replyMessageId(turnId)]);
        if (reply && own(reply.userId))
          throw new NotFoundError(
            `turn "${turnId}" was not kept for inspection: turns are kept ${RETENTION_DAYS} days, and turns from before the inspector, turns resumed after an approval across a restart, and failed or ignored turns are not kept`,
          );
        throw new NotFoundError(`no turn "${turnId}" of agent "${agentId}"`);
      }
      // Another tenant's turn does not exist for this token.
      if (!own(kept.userId)) throw new NotFoundError(`no turn "${turnId}" of agent "${agentId}"`);
      const content = decide(principal, "turn.read", {
        agentId,
        turnUserId: kept.userId,
        content: true,
      }).allowed;
      // R2 is read (for a version-2 record) only for a caller who may see the text, or the
      // memories of a turn whose references were too many for D1 and went with the text.
      const memoriesRead = hasScope(principal, "memories:read");
      const full =
        content || (memoriesRead && kept.memoriesInText) ? await inspections.withText(kept) : kept;
      const view = viewOf(full, content);
      if (memoriesRead) {
        const ids = full.memories.map((memory) => memory.id);
        const now = ids.length > 0 ? await memoriesByIds(db, agentId, ids) : [];
        const shown = new Map(
          now.filter((memory) => mayBeShownMemory(principal, memory)).map((m) => [m.id, m]),
        );
        view.memories = full.memories.flatMap((used) => {
          const memory = shown.get(used.id);
          if (!memory) return [];
          const { text } = usedMemory(memory, used.score);
          return [{ ...used, text }];
        });
      }
      return c.json(view, 200);
    },
  );
  return app;
}

function viewOf(kept: KeptInspection, content: boolean): View {
  return {
    turnId: kept.turnId,
    agentId: kept.agentId,
    roomId: kept.roomId,
    userId: kept.userId,
    startedAt: kept.startedAt,
    durationMs: kept.durationMs,
    resumed: kept.resumed,
    content,
    // A text that was not kept (not sampled, lost) is left out, as for a caller without content.
    sections: kept.sections.map(({ name, tokens, text }) =>
      content && text !== undefined ? { name, tokens, text } : { name, tokens },
    ),
    tools: kept.tools.map(({ arguments: args, output, ...call }) =>
      content && output !== undefined ? { ...call, arguments: args, output } : call,
    ),
    modelCalls: kept.modelCalls,
  };
}
