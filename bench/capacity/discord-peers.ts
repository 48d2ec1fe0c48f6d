// Discord for bench:capacity's Gateway unit: the REST stand-in served on loopback (it answers
// `GET /gateway/bot` with the Gateway stand-in's URL) and the Gateway stand-in itself, which the
// worker's DiscordGateway object connects to. A message dispatched there that mentions nobody is
// chatter: the room stores it and does not answer (respond mode "mentions", the default).
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { startGatewayStandIn } from "../../test/peers/gateway-stand-in.ts";
import { STAND_IN_GUILD } from "../../test/peers/gateway-ids.ts";
import { createDiscordStandIn } from "../../test/stand-ins/discord-stand-in.ts";

export const DISCORD_APP_ID = "100000000000000001";

export interface DiscordPeers {
  /** The worker bindings that point its Gateway and REST client at the stand-ins. */
  bindings: Record<string, string>;
  /** Dispatches `count` chatter messages (no mention) over `channels` channels of one server. */
  dispatchChatter(count: number, channels: number): Promise<void>;
  close(): Promise<void>;
}

export async function startDiscordPeers(): Promise<DiscordPeers> {
  const rest = createDiscordStandIn();
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const response = await rest.fetch(
      new Request(`http://127.0.0.1${req.url ?? "/"}`, {
        method: req.method,
        headers: {
          "content-type": "application/json",
          authorization: String(req.headers.authorization ?? ""),
        },
        body: req.method === "GET" || req.method === "HEAD" ? undefined : body,
      }),
    );
    res.writeHead(response.status, { "content-type": "application/json" });
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const gateway = await startGatewayStandIn();
  rest.setGateway(gateway.url);
  const restUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let sent = 0;
  return {
    bindings: {
      DISCORD_PUBLIC_KEY: "00".repeat(32),
      DISCORD_APPLICATION_ID: DISCORD_APP_ID,
      DISCORD_API_BASE: `${restUrl}/api/v10`,
      DISCORD_GATEWAY: "true",
      DISCORD_BOT_TOKEN: "test-bot-token-not-real",
      ALLOW_LOOPBACK_FETCH: "true",
    },
    async dispatchChatter(count, channels) {
      const events = Array.from({ length: count }, () => {
        sent += 1;
        return chatter(sent, channels);
      });
      // In chunks, as a busy server's events arrive, and to keep each control request small.
      for (let i = 0; i < events.length; i += 50) {
        const response = await fetch(`${gateway.controlUrl}/dispatch`, {
          method: "POST",
          body: JSON.stringify({ events: events.slice(i, i + 50) }),
        });
        if (!response.ok) throw new Error(`the Gateway stand-in refused: ${response.status}`);
      }
    },
    async close() {
      await gateway.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What the n-th chatter message says: about 90 characters. */
export function chatterText(n: number): string {
  return `chatter ${n}: has anyone tried the new build on the staging server since this morning?`;
}

/** A plain message in one of the server's channels, from one of 50 people. */
function chatter(n: number, channels: number) {
  const id = String(3_000_000_000_000_000n + BigInt(n));
  return {
    t: "MESSAGE_CREATE",
    d: {
      id,
      channel_id: String(810_000_000_000_000_000n + BigInt(n % channels)),
      guild_id: STAND_IN_GUILD,
      author: {
        id: String(720_000_000_000_000_000n + BigInt(n % 50)),
        username: `member${n % 50}`,
      },
      content: chatterText(n),
      type: 0,
      mentions: [],
      mention_roles: [],
      attachments: [],
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => resolve(body));
    req.on("error", reject);
  });
}
