// OAuth state for one agent and one MCP server, in D1, sealed with SECRETS_KEY (AES-GCM, the row's
// key bound as additional data). Every room of the agent reads the same row, so one consent serves
// them all. The pending authorization's `state` is stored only as a hash, to find the row when the
// browser comes back to /oauth/callback. An opened row is checked with the MCP SDK's own schemas.
import {
  OAuthClientInformationFullSchema,
  OAuthClientInformationSchema,
  OAuthMetadataSchema,
  OAuthProtectedResourceMetadataSchema,
  OAuthTokensSchema,
  OpenIdProviderDiscoveryMetadataSchema,
  type OAuthClientInformationMixed,
  type OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import { and, eq, isNull, lte, or } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db.ts";
import { readJsonColumn } from "../json-column.ts";
import { mcpCredentials } from "../schema.ts";
import type { SecretBox } from "../secret-box.ts";

export interface McpAuthData {
  redirectUrl?: string;
  clientInformation?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  codeVerifier?: string;
  discovery?: OAuthDiscoveryState;
  /** The consent URL of the authorization in progress. */
  authUrl?: string;
}

/** The sealed JSON as it is read back: the same schemas the SDK parses these values with. */
const StoredAuthData = z.object({
  redirectUrl: z.string().optional(),
  clientInformation: z
    .union([OAuthClientInformationFullSchema, OAuthClientInformationSchema])
    .optional(),
  tokens: OAuthTokensSchema.optional(),
  codeVerifier: z.string().optional(),
  discovery: z
    .object({
      authorizationServerUrl: z.string(),
      authorizationServerMetadata: z
        .union([OAuthMetadataSchema, OpenIdProviderDiscoveryMetadataSchema])
        .optional(),
      resourceMetadata: OAuthProtectedResourceMetadataSchema.optional(),
      resourceMetadataUrl: z.string().optional(),
    })
    .optional(),
  authUrl: z.string().optional(),
}) satisfies z.ZodType<McpAuthData>;

export interface McpCredentialRow {
  agentId: string;
  server: string;
  data: McpAuthData;
  stateHash: string | null;
  stateExpiresAt: number | null;
  tokenExpiresAt: number | null;
}

/** What asking for the refresh lease gave: held now, held by another room until it ends, or no row. */
export type RefreshLease = "taken" | "busy" | "missing";

export interface McpCredentialStore {
  load(agentId: string, server: string): Promise<McpCredentialRow | null>;
  save(row: McpCredentialRow, now: number): Promise<void>;
  /** Takes the row's refresh lease until `until` unless another owner holds one that has not ended. */
  takeRefreshLease(
    agentId: string,
    server: string,
    owner: string,
    now: number,
    until: number,
  ): Promise<RefreshLease>;
  releaseRefreshLease(agentId: string, server: string, owner: string): Promise<void>;
  findByStateHash(stateHash: string): Promise<McpCredentialRow | null>;
  remove(agentId: string, server: string): Promise<void>;
}

export function createMcpCredentialStore(db: Db, box: SecretBox): McpCredentialStore {
  const recordId = (agentId: string, server: string) => `mcp:${agentId}:${server}`;
  const open = async (row: typeof mcpCredentials.$inferSelect): Promise<McpCredentialRow> => ({
    agentId: row.agentId,
    server: row.server,
    data: readJsonColumn(
      StoredAuthData,
      await box.open(row.sealed, recordId(row.agentId, row.server)),
      `mcp_credentials.sealed of ${row.agentId}/${row.server}`,
    ),
    stateHash: row.stateHash,
    stateExpiresAt: row.stateExpiresAt,
    tokenExpiresAt: row.tokenExpiresAt,
  });
  return {
    async load(agentId, server) {
      const row = await db
        .select()
        .from(mcpCredentials)
        .where(and(eq(mcpCredentials.agentId, agentId), eq(mcpCredentials.server, server)))
        .get();
      return row ? open(row) : null;
    },
    async save(row, now) {
      const sealed = await box.seal(JSON.stringify(row.data), recordId(row.agentId, row.server));
      const values = {
        sealed,
        stateHash: row.stateHash,
        stateExpiresAt: row.stateExpiresAt,
        tokenExpiresAt: row.tokenExpiresAt,
        updatedAt: now,
      };
      await db
        .insert(mcpCredentials)
        .values({ agentId: row.agentId, server: row.server, ...values })
        .onConflictDoUpdate({
          target: [mcpCredentials.agentId, mcpCredentials.server],
          set: values,
        });
    },
    async takeRefreshLease(agentId, server, owner, now, until) {
      // One conditional UPDATE: D1 applies writes one at a time, so two rooms cannot both take it.
      const taken = await db
        .update(mcpCredentials)
        .set({ refreshLeaseOwner: owner, refreshLeaseUntil: until })
        .where(
          and(
            eq(mcpCredentials.agentId, agentId),
            eq(mcpCredentials.server, server),
            or(
              isNull(mcpCredentials.refreshLeaseUntil),
              lte(mcpCredentials.refreshLeaseUntil, now),
            ),
          ),
        )
        .returning({ owner: mcpCredentials.refreshLeaseOwner });
      if (taken.length > 0) return "taken";
      const exists = await db
        .select({ server: mcpCredentials.server })
        .from(mcpCredentials)
        .where(and(eq(mcpCredentials.agentId, agentId), eq(mcpCredentials.server, server)))
        .get();
      return exists ? "busy" : "missing";
    },
    async releaseRefreshLease(agentId, server, owner) {
      await db
        .update(mcpCredentials)
        .set({ refreshLeaseOwner: null, refreshLeaseUntil: null })
        .where(
          and(
            eq(mcpCredentials.agentId, agentId),
            eq(mcpCredentials.server, server),
            eq(mcpCredentials.refreshLeaseOwner, owner),
          ),
        );
    },
    async findByStateHash(stateHash) {
      const row = await db
        .select()
        .from(mcpCredentials)
        .where(eq(mcpCredentials.stateHash, stateHash))
        .get();
      return row ? open(row) : null;
    },
    async remove(agentId, server) {
      await db
        .delete(mcpCredentials)
        .where(and(eq(mcpCredentials.agentId, agentId), eq(mcpCredentials.server, server)));
    },
  };
}
