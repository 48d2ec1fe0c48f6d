// Signed Discord interactions for tests and benchmarks: the private key of the run's key pair
// (generated in vitest.config.ts) signs each body the way Discord does (timestamp + raw body).
import { env } from "cloudflare:workers";
import { afterEach, expect, vi } from "vitest";
import { createDiscordStandIn } from "../stand-ins/discord-stand-in.ts";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";
import { api, createTestAgent, MODEL_HOST } from "./api.ts";

/** The model and Discord REST stand-ins behind globalThis.fetch, reset after each test. */
export function useDiscordStandIns() {
  const model = createOpenAIStandIn();
  const discord = createDiscordStandIn();
  /** Files Discord's CDN serves, at `http://discord.test/cdn/<name>` (downloads are counted). */
  const files = new Map<string, { body: Uint8Array; type: string; downloads: number }>();
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.host === MODEL_HOST) return model.fetch(input, init);
    if (url.host === "discord.test" && url.pathname.startsWith("/cdn/")) {
      const file = files.get(url.pathname.slice("/cdn/".length));
      if (!file) return new Response("not found", { status: 404 });
      file.downloads += 1;
      return new Response(file.body, { headers: { "content-type": file.type } });
    }
    if (url.host === "discord.test") return discord.fetch(input, init);
    return realFetch(input, init);
  });
  afterEach(() => {
    model.releaseHung({ text: "late" });
    model.reset();
    discord.reset();
    files.clear();
  });
  return { model, discord, files };
}

export const APP_ID = "100000000000000001";
let privateKey: Promise<CryptoKey> | null = null;
let counter = 0;

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Discord's signature: Ed25519 over the timestamp's bytes followed by the raw body's. */
export async function sign(body: string | Uint8Array, timestamp: string): Promise<string> {
  privateKey ??= crypto.subtle.importKey(
    "pkcs8",
    Uint8Array.from(atob(env.TEST_DISCORD_PRIVATE_KEY!), (c) => c.charCodeAt(0)),
    { name: "Ed25519" },
    false,
    ["sign"],
  );
  const encoder = new TextEncoder();
  const prefix = encoder.encode(timestamp);
  const raw = typeof body === "string" ? encoder.encode(body) : body;
  const message = new Uint8Array(prefix.length + raw.length);
  message.set(prefix);
  message.set(raw, prefix.length);
  return hex(await crypto.subtle.sign({ name: "Ed25519" }, await privateKey, message));
}

export async function post(
  body: string,
  options: { timestamp?: string; signature?: string | null; tamper?: (s: string) => string } = {},
) {
  const timestamp = options.timestamp ?? String(Math.floor(Date.now() / 1000));
  const signature =
    options.signature === undefined ? await sign(body, timestamp) : options.signature;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-signature-timestamp": timestamp,
  };
  if (signature !== null) headers["x-signature-ed25519"] = signature;
  return api("POST", "/discord/interactions", {
    token: null,
    headers,
    body: options.tamper ? options.tamper(body) : body,
  });
}

export function snowflake(): string {
  counter += 1;
  return `${Date.now()}${String(counter).padStart(4, "0")}`;
}

export interface CommandOptions {
  channel?: string;
  user?: string;
  id?: string;
  options?: Array<{ name: string; type: number; value: string; focused?: boolean }>;
  type?: number;
  permissions?: string;
}

export function command(name: string, o: CommandOptions = {}) {
  return JSON.stringify({
    id: o.id ?? snowflake(),
    application_id: APP_ID,
    type: o.type ?? 2,
    token: `tok-${snowflake()}`,
    guild_id: "900000000000000001",
    channel_id: o.channel ?? "800000000000000001",
    member: {
      user: { id: o.user ?? "700000000000000001", username: "dana", global_name: "Dana" },
      permissions: o.permissions ?? "32",
    },
    data: { name, options: o.options ?? [] },
  });
}

export async function useAgentIn(
  channel: string,
  settings: Record<string, unknown> = {},
): Promise<string> {
  const agentId = await createTestAgent({
    settings: { memory: { factsEvery: 1000 }, ...settings },
  });
  const response = await post(
    command("agent", { channel, options: [{ name: "name", type: 3, value: agentId }] }),
  );
  expect(response.status).toBe(200);
  return agentId;
}

export const chat = (channel: string, text: string, extra: CommandOptions = {}) =>
  command("chat", { channel, ...extra, options: [{ name: "message", type: 3, value: text }] });

/** A click on a message button, by `user`, with its own fresh interaction token. */
export function click(
  channel: string,
  user: string,
  customId: string,
  token = `tok-${snowflake()}`,
) {
  return JSON.stringify({
    id: snowflake(),
    application_id: APP_ID,
    type: 3,
    token,
    channel_id: channel,
    member: {
      user: { id: user, username: `user${user.slice(-4)}`, global_name: `User ${user.slice(-4)}` },
      permissions: "0",
    },
    data: { custom_id: customId, component_type: 2 },
  });
}

/** A modal submitted by `user` (interaction type 5): `fields` maps text input ids to values. */
export function modalSubmit(
  channel: string,
  user: string,
  customId: string,
  fields: Record<string, string>,
  token = `tok-${snowflake()}`,
) {
  return JSON.stringify({
    id: snowflake(),
    application_id: APP_ID,
    type: 5,
    token,
    channel_id: channel,
    member: {
      user: { id: user, username: `user${user.slice(-4)}`, global_name: `User ${user.slice(-4)}` },
      permissions: "0",
    },
    data: {
      custom_id: customId,
      components: Object.entries(fields).map(([id, value]) => ({
        type: 1,
        components: [{ type: 4, custom_id: id, value }],
      })),
    },
  });
}

export interface DirectMessageOptions {
  channel: string;
  user: string;
  options?: Array<{ name: string; type: number; value: string; focused?: boolean }>;
  type?: number;
}

/** A slash command (or autocomplete, `type: 4`) in a DM with the bot: no guild, no member, only `user`. */
export function dm(name: string, o: DirectMessageOptions) {
  return JSON.stringify({
    id: snowflake(),
    application_id: APP_ID,
    type: o.type ?? 2,
    token: `tok-${snowflake()}`,
    channel_id: o.channel,
    user: {
      id: o.user,
      username: `user${o.user.slice(-4)}`,
      global_name: `User ${o.user.slice(-4)}`,
    },
    data: { name, options: o.options ?? [] },
  });
}
