// What an agent keeps, for an operator watching D1's ceiling: GET /agents/:agentId/storage, rows
// and approximate bytes by kind (src/db/stores/agent-storage.ts), what it wrote per day lately,
// and each database it uses with its size, growth and days left (database-size.ts). The whole
// agent's figures: a token limited to a user prefix may not read them (they span every tenant).
// Read over D1 sessions from the caller's D1-Bookmark (../bookmarks.ts).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { CATALOG_DB } from "../../db/shards.ts";
import { agentDataIn, catalogIn, stores } from "../../db/stores/index.ts";
import { answerBookmarks, sessionsOf } from "../bookmarks.ts";
import { agentStorage, WRITE_RATE_DAYS } from "../../db/stores/agent-storage.ts";
import { databaseSize } from "../../db/stores/database-size.ts";
import { authorize } from "../../runtime/access/authorize.ts";
import { ForbiddenError, NotFoundError } from "../../runtime/util/errors.ts";
import { AgentIdParam, errorContent } from "../schemas.ts";

const KindRow = z
  .object({
    kind: z.string().openapi({
      description:
        "A memory type (message, summary, fact, description, lore, document, fragment), `vector` (the local index), `usage_record` or `inspection`",
    }),
    rows: z.number().int(),
    bytes: z.number().int().openapi({ description: "Approximate: text, blobs and index entries" }),
    bytesPerDay: z
      .number()
      .int()
      .openapi({
        description: `Bytes of this kind written per day over the last ${WRITE_RATE_DAYS} days`,
      }),
  })
  .openapi("StorageKind");

export const DatabaseSizeShape = z
  .object({
    name: z.string().openapi({ description: "`DB` (the catalog) or a memory database" }),
    bytes: z.number().int().nullable(),
    limitBytes: z.number().int().openapi({ description: "D1's ceiling per database" }),
    bytesPerDay: z.number().int().nullable().openapi({
      description: "The whole database's growth per day over the last week (null: not yet known)",
    }),
    daysLeft: z.number().int().nullable().openapi({
      description: "Days to the ceiling at that rate (null: not growing, or not yet known)",
    }),
  })
  .openapi("DatabaseSize");

const StorageAnswer = z
  .object({
    agentId: z.string(),
    kinds: z.array(KindRow),
    total: KindRow.omit({ kind: true }),
    databases: z.array(DatabaseSizeShape),
  })
  .openapi("AgentStorage");

export function storageRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.openapi(
    createRoute({
      method: "get",
      path: "/agents/{agentId}/storage",
      summary: "What the agent keeps in D1, how fast it grows, and the days left to the ceiling",
      ...guard("agents:read"),
      request: { params: z.object({ agentId: AgentIdParam }) },
      responses: {
        200: {
          description: "Rows and bytes by kind, the largest first; the databases holding them",
          content: { "application/json": { schema: StorageAnswer } },
        },
        403: errorContent("The token may not read this agent, or is limited to a user prefix"),
        404: errorContent("No such agent"),
      },
    }),
    async (c) => {
      const { agentId } = c.req.valid("param");
      const principal = c.get("principal");
      authorize(principal, "agent.read", { agentId });
      if (principal.kind === "token" && principal.userPrefix !== null)
        throw new ForbiddenError(
          "an agent's storage spans every user of it; a token limited to a user prefix may not read it",
        );
      if (!(await stores(c.env).agents.get(agentId)))
        throw new NotFoundError(`no agent with id "${agentId}"`);
      const sessions = sessionsOf(c);
      const data = await agentDataIn(c.env, agentId, sessions, "read");
      const catalog = catalogIn(c.env, sessions);
      const now = Date.now();
      const homes =
        data.database === CATALOG_DB ? [data] : [{ database: CATALOG_DB, db: catalog }, data];
      const [sizes, ...databases] = await Promise.all([
        agentStorage(data.db, catalog, agentId, now),
        ...homes.map(async (home) => ({
          name: home.database,
          ...(await databaseSize(home.db, now)),
        })),
      ]);
      const kinds = sizes
        .map(({ recentBytes, ...size }) => ({
          ...size,
          bytesPerDay: Math.round(recentBytes / WRITE_RATE_DAYS),
        }))
        .sort((a, b) => b.bytes - a.bytes || a.kind.localeCompare(b.kind));
      const total = kinds.reduce(
        (sum, kind) => ({
          rows: sum.rows + kind.rows,
          bytes: sum.bytes + kind.bytes,
          bytesPerDay: sum.bytesPerDay + kind.bytesPerDay,
        }),
        { rows: 0, bytes: 0, bytesPerDay: 0 },
      );
      answerBookmarks(c, sessions);
      return c.json({ agentId, kinds, total, databases }, 200);
    },
  );
  return app;
}
