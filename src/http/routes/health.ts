// Liveness and what backs this deployment: which model backend serves turns (and with which
// models), which embedder and vector index serve memory (and whether their dimensions agree),
// that D1 answers, and which schema version it holds (the migrations the worker applied itself,
// or the one that failed), with DISCORD_GATEWAY=true the Gateway's state (each shard's), and how
// many after-reply evaluators failed today (facts and summaries lost while replies look fine), and
// how many filter patterns saved before the filter's cost bound are suspended, and each database's
// size with its days left to D1's ceiling (from the upkeep's daily samples: no table is scanned).
// Public (no token): it names backends, never keys, session ids, URLs with credentials, or what a
// filter holds (only counts; the admin's config route shows the patterns).
import { exportStats, traceConfig } from "../../telemetry/otlp.ts";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { type Config, loadConfig } from "../../config.ts";
import { discordPublicKey, SURFACES, type Surface } from "../../surfaces.ts";
import type { ModelFailureCause } from "../../runtime/util/errors.ts";
import type { Env } from "../../env.ts";
import { CATALOG_DB } from "../../db/shards.ts";
import { dataOn, stores } from "../../db/stores/index.ts";
import { describeEmbedder } from "../../model/embedder.ts";
import { deploymentSizes } from "../../db/stores/database-size.ts";
import { DatabaseSizeShape } from "./storage.ts";
import { ensureSchema } from "../../db/schema-ready.ts";
import { gatewayObject } from "../../clients/discord/gateway/gateway-client.ts";
import type { Stores } from "../../db/stores/index.ts";

const SurfaceHealth = z.object({
  state: z.enum(["on", "off", "unset"]),
  problem: z.string().nullable(),
});

const ShardHealth = z.object({
  state: z.enum([
    "off",
    "disconnected",
    "connecting",
    "identifying",
    "resuming",
    "ready",
    "stopped",
  ]),
  connected: z.boolean(),
  resuming: z.boolean(),
  reconnects: z.number().int(),
  identifies: z.number().int(),
  resumes: z.number().int(),
  lastEvent: z.string().nullable(),
  lastEventAt: z.number().nullable().openapi({ description: "Milliseconds since the epoch" }),
  lastClose: z.object({ code: z.number().int(), at: z.number() }).nullable(),
  eventsHandled: z.number().int(),
  inFlight: z.number().int(),
  stoppedReason: z.string().nullable(),
});

const GatewayHealth = ShardHealth.extend({
  shardCount: z
    .number()
    .int()
    .openapi({ description: "Shards running (0 before the first start)" }),
  resharding: z
    .object({
      from: z.number().int(),
      to: z.number().int(),
      ready: z.number().int().openapi({ description: "New shards READY so far" }),
      deadline: z.number().openapi({
        description: "Milliseconds since the epoch: the old shards go then, ready or not",
      }),
    })
    .nullable()
    .openapi({
      description:
        "A change of shard count under way: the old shards keep delivering until every new one is READY",
    }),
  shards: z.array(
    ShardHealth.extend({
      shard: z.array(z.number().int()).openapi({ description: "[shard id, shard count]" }),
      retiring: z
        .boolean()
        .openapi({ description: "An old shard, closed once the new count is READY" }),
    }),
  ),
})
  .nullable()
  .optional()
  .openapi({
    description:
      "The Discord Gateway, only with DISCORD_GATEWAY=true: every shard summed up (a stopped shard makes it stopped, else the least advanced state; counters added), then each shard (null: the object did not answer)",
  });

const Health = z
  .object({
    status: z.enum(["ok", "degraded"]),
    model: z.object({
      backend: z.enum(["openai", "workers-ai", "none"]),
      primary: z.string().nullable(),
      fallbacks: z.array(z.string()),
      small: z.string().nullable(),
      failedToday: z.number().int().nullable().openapi({
        description:
          "Turns whose model failed today (UTC), after retries and fallbacks; null: D1 could not be read",
      }),
      lastFailure: z
        .object({
          model: z.string(),
          cause: z.string().openapi({
            description:
              "unreachable, unknown_model, credentials, overloaded, invalid_reply or other",
          }),
          at: z.number().openapi({ description: "Milliseconds since the epoch" }),
          fix: z.string(),
        })
        .nullable(),
    }),
    database: z.enum(["ok", "unavailable"]),
    schema: z
      .object({
        version: z.string().nullable().openapi({ description: "The newest migration D1 holds" }),
        latest: z
          .string()
          .nullable()
          .openapi({ description: "The newest migration this code brings" }),
        pending: z.array(z.string()),
        error: z.object({ migration: z.string(), message: z.string() }).nullable().openapi({
          description: "The migration that failed; the worker serves on the version before it",
        }),
      })
      .nullable()
      .openapi({ description: "null: the schema gate could not be asked just now" }),
    embedding: z.object({
      backend: z.enum(["openai", "workers-ai", "local"]),
      id: z.string(),
      dimensions: z.number().int(),
    }),
    vectors: z.object({
      backend: z.enum(["vectorize", "local"]),
      dimensions: z
        .number()
        .int()
        .nullable()
        .openapi({ description: "The index's dimension (null: an empty local index)" }),
      status: z.enum(["ok", "dimension_mismatch", "unavailable"]),
    }),
    gateway: GatewayHealth,
    surfaces: z
      .object({
        discord: SurfaceHealth,
        telegram: SurfaceHealth,
        slack: SurfaceHealth,
        instagram: SurfaceHealth,
      })
      .openapi({
        description:
          "Each chat surface: on, unset (its variables are not set), or off because one of its own variables is malformed (problem names the variable and the rule). An off surface's routes answer 503; the rest of the worker runs",
      }),
    evaluators: z
      .object({
        failedToday: z.number().int(),
        last: z
          .object({
            evaluator: z.string(),
            at: z.number().openapi({ description: "Milliseconds since the epoch" }),
            cause: z.string().nullable().openapi({
              description:
                "Why its model call failed (as model.lastFailure.cause); null: not the model",
            }),
            fix: z.string(),
          })
          .nullable(),
      })
      .nullable()
      .openapi({
        description:
          "After-reply evaluators (facts, summaries) that failed today (UTC): the replies looked fine, but nothing was remembered. The last one's cause and what to check. null: D1 could not be read",
      }),
    filters: z
      .object({
        suspendedPatterns: z.object({
          discord: z.number().int(),
          telegram: z.number().int(),
          slack: z.number().int(),
        }),
      })
      .nullable()
      .openapi({
        description:
          "Filter patterns saved before the filter's cost bound that pass it, per client (Discord: every server's together): kept, not applied, each named with its reason in GET /clients/{client}/config (`filter.suspended`) and Discord's /settings show. null: D1 could not be read",
      }),
    storage: z
      .object({ databases: z.array(DatabaseSizeShape) })
      .nullable()
      .openapi({
        description:
          "Each database's size, growth per day over the last week and days left to D1's ceiling, from the hourly upkeep's daily samples (docs/memory.md#watching-the-ceiling). null: D1 could not be read",
      }),
    traces: z
      .object({
        collector: z.string().openapi({ description: "The OTLP endpoint's origin" }),
        exported: z.number().int(),
        dropped: z.number().int(),
        lastError: z.string().nullable(),
      })
      .nullable()
      .openapi({
        description:
          "Span export from this isolate since it started (each isolate counts its own; rooms run in theirs). null: no OTLP endpoint is configured",
      }),
  })
  .openapi("Health");

export function healthRoutes(): OpenAPIHono<{ Bindings: Env }> {
  const app = new OpenAPIHono<{ Bindings: Env }>();
  app.openapi(
    createRoute({
      method: "get",
      path: "/health",
      summary: "Liveness and active backends",
      responses: {
        200: { description: "Healthy", content: { "application/json": { schema: Health } } },
        503: {
          description: "A backend is unavailable",
          content: { "application/json": { schema: Health } },
        },
      },
    }),
    async (c) => {
      const config = loadConfig(c.env);
      const tracing = traceConfig(c.env);
      const { embedder, index } = dataOn(c.env, CATALOG_DB);
      const gatewayStub = gatewayObject(c.env);
      // One indexed read per database: D1 reports the size with it (database-size.ts).
      const storage = deploymentSizes(c.env, Date.now()).then(
        (databases) => ({ databases }),
        () => null,
      );
      const [database, indexDimensions, schemaNow, , gateway, evaluators, modelFailures, filters] =
        await Promise.all([
          stores(c.env)
            .reachable()
            .then((ok) => (ok ? ("ok" as const) : ("unavailable" as const))),
          index.dimensions().catch(() => "unavailable" as const),
          ensureSchema(c.env),
          embedder.ready?.().catch(() => undefined),
          gatewayStub
            ? gatewayStub.status().then(
                (status) => status,
                () => null,
              )
            : null,
          stores(c.env)
            .evaluatorFailures.today(Date.now())
            .then(({ failed, last }) => ({
              failedToday: failed,
              last: last ? { ...last, fix: fixFor(last.cause) } : null,
            }))
            .catch(() => null),
          stores(c.env)
            .modelFailures.today(Date.now())
            .catch(() => null),
          suspendedFilterPatterns(stores(c.env)).catch(() => null),
        ]);
      const schema = schemaNow
        ? {
            version: schemaNow.version,
            latest: schemaNow.latest,
            pending: schemaNow.pending,
            error: schemaNow.error,
          }
        : null;
      const vectors = {
        backend: index.kind,
        dimensions: typeof indexDimensions === "number" ? indexDimensions : null,
        status:
          indexDimensions === "unavailable"
            ? ("unavailable" as const)
            : indexDimensions !== null && indexDimensions !== embedder.dimensions
              ? ("dimension_mismatch" as const)
              : ("ok" as const),
      };
      const configured = config.model.kind !== "none";
      const healthy =
        database === "ok" &&
        vectors.status === "ok" &&
        schema?.error == null &&
        gateway?.state !== "stopped";
      const body = {
        status: healthy ? ("ok" as const) : ("degraded" as const),
        model: {
          backend: config.model.kind,
          primary: configured ? config.models.primary : null,
          fallbacks: configured ? config.models.fallbacks : [],
          small: configured ? config.models.small : null,
          failedToday: modelFailures?.failed ?? null,
          lastFailure: modelFailures?.last
            ? { ...modelFailures.last, fix: fixFor(modelFailures.last.cause) }
            : null,
        },
        database,
        schema,
        embedding: describeEmbedder(embedder),
        vectors,
        ...(gatewayStub ? { gateway } : {}),
        surfaces: surfaceStates(config, c.env),
        evaluators,
        filters,
        storage: await storage,
        traces: tracing
          ? {
              collector: new URL(tracing.url).origin,
              exported: exportStats.spans,
              dropped: exportStats.dropped,
              lastError: exportStats.lastError,
            }
          : null,
      };
      return c.json(body, healthy ? 200 : 503);
    },
  );
  return app;
}

/** What an operator checks for each cause of a model failure (ModelFailureCause). */
const FIXES: Record<ModelFailureCause, string> = {
  unreachable:
    "The model endpoint did not answer: check OPENAI_BASE_URL and that the model server is running.",
  unknown_model:
    "The endpoint does not serve that model: check MODEL (SMALL_MODEL for memory steps) against its model list.",
  credentials: "The endpoint refused the key: check OPENAI_API_KEY.",
  overloaded:
    "The endpoint was busy or failing (429 or 5xx): this usually passes; MODEL_FALLBACKS names models to try meanwhile.",
  invalid_reply:
    "The model did not reply with the JSON asked for: use a model that follows JSON instructions (SMALL_MODEL for memory steps).",
  other: "See the worker's log lines for that turn (run_failed, evaluator_failed).",
};

function fixFor(cause: string | null): string {
  return FIXES[(cause ?? "other") as ModelFailureCause] ?? FIXES.other;
}

/** Which surfaces run (see Config.surfacesOff). */
function surfaceStates(config: Config, env: Env) {
  const set: Record<Surface, boolean> = {
    discord: discordPublicKey(env) !== null,
    telegram: config.telegram !== null,
    slack: config.slack !== null,
    instagram: config.instagram !== null,
  };
  return Object.fromEntries(
    SURFACES.map((surface) => {
      const problem = config.surfacesOff[surface] ?? null;
      return [
        surface,
        { state: problem ? "off" : set[surface] ? "on" : "unset", problem } as const,
      ];
    }),
  ) as Record<Surface, { state: "on" | "off" | "unset"; problem: string | null }>;
}

/** Suspended filter patterns per client, from the configs as read back (counts only). */
async function suspendedFilterPatterns(all: Stores) {
  const [discord, telegram, slack] = await Promise.all([
    all.discord.readConfig(),
    all.telegram.readConfig(),
    all.slack.readConfig(),
  ]);
  const count = (filter: { suspended?: unknown[] } | undefined) => filter?.suspended?.length ?? 0;
  return {
    suspendedPatterns: {
      discord: Object.values(discord.guilds).reduce((sum, guild) => sum + count(guild.filter), 0),
      telegram: count(telegram.filter),
      slack: count(slack.filter),
    },
  };
}
