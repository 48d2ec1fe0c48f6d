// The Discord bot over interaction webhooks. The signature (Ed25519 over timestamp + raw body) is
// checked before anything is parsed; a timestamp older than 5 minutes is a replay. `/chat` is
// journalled in its room's Durable Object with one RPC and acknowledged with a deferred response
// (type 5) at once; the room edits that response when the turn is done. The other commands are
// small D1 reads and writes answered directly (discord-commands.ts). Room = `discord:<channel>`,
// user = `discord:<user>`.
import { loadConfig } from "../../../config.ts";
import { discordPublicKey, surfaceUnavailable } from "../../../surfaces.ts";
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { verifyKey } from "discord-interactions";
import type { AppEnv } from "../../app-env.ts";
import { guard } from "../../auth.ts";
import { answerApprovalPress } from "../../../clients/chat/approval-flow.ts";
import { interactionDelivery } from "../../../clients/discord/interaction-delivery.ts";
import {
  Interaction,
  InteractionType,
  invoker,
  ResponseType,
  type ComponentInteraction,
} from "../../../clients/discord/interaction.ts";
import { DiscordConfig } from "../../../db/stores/discord-settings-store.ts";
import { agentData, stores } from "../../../db/stores/index.ts";
import { deleteMemories } from "../../../db/memory/memory-repo.ts";
import { forgetRoomHistory } from "../../../objects/conversation/room-client.ts";
import {
  approvalResultText,
  parseApprovalCustomId,
  type ApprovalButton,
} from "../../../clients/discord/approval.ts";
import { parseProposalCustomId } from "../../../clients/discord/proposal-prompt.ts";
import { answerProposalClick } from "./discord-proposals.ts";
import {
  NotConfiguredError,
  NotFoundError,
  UnauthorizedError,
  ValidationError,
} from "../../../runtime/util/errors.ts";
import { anyJsonObject, errorContent, signedBody } from "../../schemas.ts";
import { validationError } from "../../validation.ts";
import { taskQuestionClick, taskQuestionSubmit } from "./discord-task-input.ts";
import { autocomplete, command } from "./discord-commands.ts";
import { type Ctx, message, owners } from "./discord-replies.ts";

/** Discord signs the time it sent the request; older than this is treated as a replay. */
export const MAX_INTERACTION_AGE_MS = 5 * 60 * 1000;
export const MAX_INTERACTION_BODY_BYTES = 256 * 1024;

const publicKeys = new Map<string, Promise<CryptoKey>>();
function publicKey(hex: string): Promise<CryptoKey> {
  let key = publicKeys.get(hex);
  if (!key) {
    const bytes = new Uint8Array(hex.match(/../g)?.map((pair) => Number.parseInt(pair, 16)) ?? []);
    key = crypto.subtle.importKey("raw", bytes, { name: "Ed25519" }, false, ["verify"]);
    key.catch(() => publicKeys.delete(hex));
    publicKeys.set(hex, key);
  }
  return key;
}

export function discordRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();

  // Documented, not validated by the route schema: the signature covers the raw bytes, so the body
  // is read and verified first and parsed after (below).
  app.openAPIRegistry.registerPath({
    method: "post",
    path: "/discord/interactions",
    summary: "Discord interactions webhook (Ed25519-signed by Discord; no bearer token)",
    request: {
      headers: z.object({
        "x-signature-ed25519": z
          .string()
          .openapi({ description: "Hex Ed25519 signature of timestamp + body" }),
        "x-signature-timestamp": z
          .string()
          .openapi({ description: "Unix seconds; refused when more than 5 minutes off" }),
      }),
      body: signedBody("application/json", anyJsonObject("A Discord interaction")),
    },
    responses: {
      200: {
        description: "An interaction response (PONG, a message, or a deferred acknowledgement)",
      },
      400: errorContent("A verified body that is not a valid interaction"),
      401: errorContent("Missing, stale or invalid signature"),
    },
  });

  app.post("/discord/interactions", async (c) => {
    const config = loadConfig(c.env);
    if (config.surfacesOff.discord)
      throw surfaceUnavailable(config, "discord", "DISCORD_PUBLIC_KEY");
    const keyHex = discordPublicKey(c.env);
    if (!keyHex) {
      throw new NotConfiguredError(
        "DISCORD_PUBLIC_KEY is not set (or is not 64 hex characters): copy it from the Discord developer portal",
      );
    }
    const signature = c.req.header("x-signature-ed25519");
    const timestamp = c.req.header("x-signature-timestamp");
    if (!signature || !timestamp)
      throw new UnauthorizedError("missing X-Signature-Ed25519 or X-Signature-Timestamp");
    if (
      !/^\d{1,12}$/.test(timestamp) ||
      Math.abs(Date.now() - Number(timestamp) * 1000) > MAX_INTERACTION_AGE_MS
    ) {
      throw new UnauthorizedError(
        "the signed timestamp is more than 5 minutes off: refused as a replay",
      );
    }
    const raw = new Uint8Array(await c.req.arrayBuffer());
    if (!(await verifyKey(raw, signature, timestamp, await publicKey(keyHex))))
      throw new UnauthorizedError("invalid request signature");

    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(raw));
    } catch {
      throw new ValidationError("invalid request body: not JSON");
    }
    const parsed = Interaction.safeParse(body);
    if (!parsed.success) throw validationError("json", parsed.error.issues);
    const interaction = parsed.data;
    switch (interaction.type) {
      case InteractionType.PING:
        return c.json({ type: ResponseType.PONG });
      case InteractionType.AUTOCOMPLETE:
        return c.json(await autocomplete(c, interaction));
      case InteractionType.MESSAGE_COMPONENT:
        return c.json(await component(c, interaction));
      case InteractionType.APPLICATION_COMMAND:
        return c.json(await command(c, interaction));
      case InteractionType.MODAL_SUBMIT:
        return c.json(
          (await taskQuestionSubmit(c, interaction)) ?? message("That form is no longer valid."),
        );
    }
  });

  app.openapi(
    createRoute({
      method: "get",
      path: "/clients/{clientId}/config",
      summary: "A client's settings (Discord: default agent, allowed channels)",
      ...guard("admin"),
      request: { params: z.object({ clientId: z.literal("discord") }) },
      responses: {
        200: {
          description: "The settings",
          content: { "application/json": { schema: DiscordConfig } },
        },
        400: errorContent("Unknown client"),
      },
    }),
    async (c) => c.json(await stores(c.env).discord.readConfig(), 200),
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/clients/{clientId}/config",
      summary:
        "Set a client's settings (Discord: default agent, allowed channels, settings per server and channel)",
      ...guard("admin"),
      request: {
        params: z.object({ clientId: z.literal("discord") }),
        body: { required: true, content: { "application/json": { schema: DiscordConfig } } },
      },
      responses: {
        200: {
          description: "The settings as stored",
          content: { "application/json": { schema: DiscordConfig } },
        },
        400: errorContent("Invalid settings or unknown client"),
        404: errorContent("An agent named (the default, a server's) does not exist"),
      },
    }),
    async (c) => {
      const config = c.req.valid("json");
      // Every agent named, the default and each server's, must exist: a typo would go quiet.
      const named = [
        ...(config.defaultAgentId ? [["defaultAgentId", config.defaultAgentId]] : []),
        ...Object.entries(config.guilds).flatMap(([guildId, guild]) =>
          guild.agentId ? [[`guilds.${guildId}.agentId`, guild.agentId]] : [],
        ),
      ];
      const versions = await Promise.all(
        named.map(([, agentId]) => stores(c.env).agents.version(agentId!)),
      );
      const missing = named.filter((_, i) => versions[i] === null);
      if (missing.length > 0)
        throw new NotFoundError(
          missing.map(([path, agentId]) => `${path}: no agent with id "${agentId}"`).join("; "),
        );
      await stores(c.env).discord.writeConfig(config, Date.now());
      return c.json(config, 200);
    },
  );
  return app;
}

async function component(c: Ctx, interaction: ComponentInteraction) {
  const approval = parseApprovalCustomId(interaction.data.custom_id);
  if (approval) return answerApproval(c, interaction, approval);
  const question = await taskQuestionClick(c, interaction);
  if (question) return question;
  const proposal = parseProposalCustomId(interaction.data.custom_id);
  if (proposal) return answerProposalClick(c.env, interaction, proposal, owners(c));
  const user = invoker(interaction);
  const match = /^forget:(yes|no):(\d{1,20}):([A-Za-z0-9][A-Za-z0-9_-]{0,63})$/.exec(
    interaction.data.custom_id,
  );
  if (!user || !match) return message("That button is no longer valid.");
  const [, choice, ownerId, agentId] = match;
  if (user.id !== ownerId) return message("Only the person who asked can answer this.");
  if (choice === "no")
    return {
      type: ResponseType.UPDATE_MESSAGE,
      data: { content: "Nothing was deleted.", components: [] },
    };
  const { deleted, rooms } = await deleteMemories((await agentData(c.env, agentId!)).db, {
    agentId: agentId!,
    userId: `discord:${ownerId}`,
  });
  c.executionCtx.waitUntil(forgetRoomHistory(c.env, agentId!, rooms));
  return {
    type: ResponseType.UPDATE_MESSAGE,
    data: {
      content: `Done: I forgot ${deleted} ${deleted === 1 ? "memory" : "memories"} about you.`,
      components: [],
    },
  };
}

/**
 * Approve / Deny on a paused turn's or task's prompt: the chat room (`ap:`) or the agent's task
 * object (`tap:`) decides whether this click counts.
 */
async function answerApproval(c: Ctx, interaction: ComponentInteraction, button: ApprovalButton) {
  const user = invoker(interaction);
  if (!user || !interaction.channel_id) return message("That button is no longer valid.");
  const name = user.global_name ?? user.username;
  const from = {
    userId: `discord:${user.id}`,
    userName: name,
    // The click's own interaction: its token is fresh, and its @original is the prompt.
    via: interactionDelivery(interaction, interaction.channel_id, Date.now()),
  };
  const roomId = `discord:${interaction.channel_id}`;
  const result = await answerApprovalPress(c.env, { button, roomId, from }, { tasks: true });
  switch (result.status) {
    case "invalid":
      return message("That button is no longer valid.");
    case "not_yours":
      return message("Only the person who asked can approve or deny this.");
    case "gone":
      return message(
        "This request is no longer waiting for an answer: it was already answered, or it expired.",
      );
    case "resolved":
      return {
        type: ResponseType.UPDATE_MESSAGE,
        data: {
          content: approvalResultText(result.tool, result.decision, name),
          components: [],
          allowed_mentions: { parse: [] },
        },
      };
  }
}
