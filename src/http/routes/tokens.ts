// API tokens: minted, listed and revoked by an admin. The secret is returned once, at minting;
// listings never include it. A token can be limited to listed agents and to a user-id prefix (see
// ../namespaces.ts), and can expire; `admin` tokens cannot be limited (they mint tokens and
// configure clients, which span every agent and user).
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { stores } from "../../db/stores/index.ts";
import { SCOPES } from "../../db/stores/token-store.ts";
import { NotFoundError, ValidationError } from "../../runtime/util/errors.ts";
import { parseRateRule, RATE_RULE_FORMAT } from "../../rate-limits/token-bucket.ts";
import type { AppEnv } from "../app-env.ts";
import { guard } from "../auth.ts";
import { forgetToken, TOKEN_CACHE_MS } from "../known-tokens.ts";
import { UserPrefix } from "../namespaces.ts";
import { AgentIdParam, errorContent, jsonContent } from "../schemas.ts";

/** Up to five years; a token meant to live longer should be rotated anyway. */
const MAX_TOKEN_LIFETIME_SECONDS = 5 * 366 * 24 * 3600;
/** Listing agents filters by these ids in one query; D1 binds at most 100 parameters. */
const MAX_AGENTS_PER_TOKEN = 50;

const TokenInfo = z
  .object({
    id: z.string(),
    name: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    agents: z
      .array(z.string())
      .nullable()
      .openapi({ description: "The agents it may act for; null means every agent." }),
    createdBy: z.string(),
    createdAt: z.number().int(),
    expiresAt: z.number().int().nullable(),
    revokedAt: z.number().int().nullable(),
    rateLimit: z
      .string()
      .nullable()
      .openapi({ description: "This token's own rate rule; null means RATE_LIMIT_PER_TOKEN." }),
    userPrefix: z.string().nullable().openapi({
      description:
        "The user-id prefix it may act as; null means any user outside the reserved namespaces.",
    }),
    lastUsedAt: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "Updated at most once a minute." }),
  })
  .openapi("ApiToken");

const MintBody = z
  .strictObject({
    name: z.string().trim().min(1).max(100).openapi({ example: "discord-moderators" }),
    scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
    agents: z
      .array(AgentIdParam)
      .min(1)
      .max(MAX_AGENTS_PER_TOKEN)
      .optional()
      .openapi({ description: "Limit the token to these agents" }),
    expiresInSeconds: z.number().int().min(60).max(MAX_TOKEN_LIFETIME_SECONDS).optional(),
    rateLimit: z
      .string()
      .max(32)
      .refine(isRateRule, `must be ${RATE_RULE_FORMAT}`)
      .optional()
      .openapi({
        description: "This token's own rate rule instead of RATE_LIMIT_PER_TOKEN",
        example: "100/min",
      }),
    userPrefix: UserPrefix.optional().openapi({
      description:
        "Limit the token to users whose id starts with this, in rooms starting with it or their own `user:<userId>` rooms",
      example: "acme:",
    }),
  })
  .openapi("MintToken");

const TokenIdParam = z
  .string()
  .regex(/^tok_[0-9a-f]{16}$/, "token ids look like tok_ followed by 16 hex digits")
  .openapi({ param: { name: "tokenId", in: "path" }, example: "tok_0123456789abcdef" });

function isRateRule(text: string): boolean {
  try {
    parseRateRule(text);
    return true;
  } catch {
    return false;
  }
}

export function tokenRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  const store = (env: AppEnv["Bindings"]) => stores(env).tokens;

  app.openapi(
    createRoute({
      method: "post",
      path: "/auth/tokens",
      summary: "Mint an API token (its secret is shown only in this response)",
      ...guard("admin"),
      request: { body: { required: true, content: { "application/json": { schema: MintBody } } } },
      responses: {
        201: jsonContent(
          TokenInfo.extend({
            token: z
              .string()
              .openapi({ description: "The bearer token. Store it now: it is not shown again." }),
          }),
          "The new token",
        ),
        400: errorContent("Invalid scopes, agents, user prefix or lifetime"),
      },
    }),
    async (c) => {
      const body = c.req.valid("json");
      const scopes = [...new Set(body.scopes)];
      const agents = body.agents ? [...new Set(body.agents)] : null;
      if (scopes.includes("admin") && agents) {
        throw new ValidationError(
          "an admin token cannot be limited to agents: drop `agents` or the `admin` scope",
        );
      }
      if (scopes.includes("admin") && body.userPrefix !== undefined) {
        throw new ValidationError(
          "an admin token cannot be limited to a user prefix: drop `userPrefix` or the `admin` scope",
        );
      }
      const now = Date.now();
      const { record, token } = await store(c.env).mint(
        {
          name: body.name,
          scopes,
          agents,
          rateLimit: body.rateLimit?.trim().toLowerCase() ?? null,
          userPrefix: body.userPrefix ?? null,
          expiresAt: body.expiresInSeconds ? now + body.expiresInSeconds * 1000 : null,
          createdBy: c.get("principal").id,
        },
        now,
      );
      c.header("Cache-Control", "no-store");
      return c.json({ ...record, token }, 201);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/auth/tokens",
      summary: "List API tokens (never their secrets), revoked ones included",
      ...guard("admin"),
      responses: {
        200: jsonContent(
          z.object({ tokens: z.array(TokenInfo) }),
          "Every minted token, oldest first",
        ),
      },
    }),
    async (c) => c.json({ tokens: await store(c.env).list() }, 200),
  );

  app.openapi(
    createRoute({
      method: "delete",
      path: "/auth/tokens/{tokenId}",
      summary: `Revoke an API token (effective at once where revoked, everywhere within ${TOKEN_CACHE_MS / 1000} s)`,
      ...guard("admin"),
      request: { params: z.object({ tokenId: TokenIdParam }) },
      responses: {
        204: { description: "Revoked (revoking again is harmless)" },
        404: errorContent("No such token"),
      },
    }),
    async (c) => {
      const { tokenId } = c.req.valid("param");
      if (!(await store(c.env).revoke(tokenId, Date.now())))
        throw new NotFoundError(`no token with id "${tokenId}"`);
      forgetToken(tokenId);
      return c.body(null, 204);
    },
  );
  return app;
}
