// The bot's owners: the only people who manage it in a DM (where Discord gives no permissions).
// DISCORD_OWNER_IDS, plus whoever owns the application by Discord's `GET /applications/@me`: its
// `owner` for a personal app; for a team's app the team owner and the team's admins. The lookup is
// cached per isolate; when it fails, only DISCORD_OWNER_IDS count (fail closed).
import { z } from "zod";
import { DEFAULT_DISCORD_API_BASE } from "./rest.ts";

/** How long a successful lookup is trusted: a transferred app or a removed admin waits at most this. */
export const OWNERS_CACHE_MS = 5 * 60 * 1000;
/** After a failed lookup, how long only DISCORD_OWNER_IDS count before Discord is asked again. */
export const OWNERS_RETRY_MS = 30 * 1000;
/** Discord answers an interaction within 3 s: the lookup gets a part of that. */
export const OWNERS_LOOKUP_TIMEOUT_MS = 1_500;

/** Team member role and membership state, as Discord's Teams documentation defines them. */
const TEAM_ADMIN_ROLE = "admin";
const MEMBERSHIP_ACCEPTED = 2;

const Snowflake = z.string().regex(/^\d{1,20}$/);
const Application = z.object({
  owner: z.object({ id: Snowflake }).nullish(),
  team: z
    .object({
      owner_user_id: Snowflake,
      members: z
        .array(
          z.object({
            membership_state: z.number().int(),
            role: z.string().optional(),
            user: z.object({ id: Snowflake }),
          }),
        )
        .default([]),
    })
    .nullish(),
});

interface Lookup {
  owners: ReadonlySet<string>;
  until: number;
}

export interface DiscordOwners {
  isOwner(userId: string): Promise<boolean>;
}

export interface DiscordOwnersOptions {
  /** DISCORD_OWNER_IDS. */
  configured: readonly string[];
  apiBase?: string;
  /** Without the bot token the application cannot be looked up: only `configured` count. */
  botToken?: string;
  fetch?: typeof fetch;
  now?: () => number;
}

/** Owners of a Discord application object: the team's owner and accepted admins, or the app's owner. */
export function applicationOwners(body: unknown): string[] {
  const app = Application.parse(body);
  // A team's app has a synthetic `owner` standing for the team: the team's own fields decide.
  if (app.team) {
    const admins = app.team.members.filter(
      (member) =>
        member.role === TEAM_ADMIN_ROLE && member.membership_state === MEMBERSHIP_ACCEPTED,
    );
    return [app.team.owner_user_id, ...admins.map((member) => member.user.id)];
  }
  return app.owner ? [app.owner.id] : [];
}

export function createDiscordOwners(options: DiscordOwnersOptions): DiscordOwners {
  const configured = new Set(options.configured);
  const base = (options.apiBase || DEFAULT_DISCORD_API_BASE).replace(/\/+$/, "");
  const doFetch = options.fetch ?? ((input, init) => fetch(input, init));
  const now = options.now ?? Date.now;
  let latest: Lookup | null = null;
  let pending: Promise<Lookup> | null = null;

  const lookUp = async (): Promise<Lookup> => {
    const started = now();
    // Fail closed: on any failure nobody beyond DISCORD_OWNER_IDS, and Discord is asked again a little later.
    const failed: Lookup = { owners: new Set(), until: started + OWNERS_RETRY_MS };
    try {
      const response = await doFetch(`${base}/applications/@me`, {
        headers: { authorization: `Bot ${options.botToken}` },
        signal: AbortSignal.timeout(OWNERS_LOOKUP_TIMEOUT_MS),
      });
      if (!response.ok) return failed;
      return {
        owners: new Set(applicationOwners(await response.json())),
        until: started + OWNERS_CACHE_MS,
      };
    } catch {
      // Unreachable, timed out, or not an application object.
      return failed;
    }
  };

  return {
    async isOwner(userId) {
      if (configured.has(userId)) return true;
      if (!options.botToken) return false;
      if (latest && now() < latest.until) return latest.owners.has(userId);
      // Concurrent checks share one lookup.
      pending ??= lookUp().then((result) => {
        latest = result;
        pending = null;
        return result;
      });
      return (await pending).owners.has(userId);
    },
  };
}

const perIsolate = new Map<string, DiscordOwners>();

/** One directory per configuration for the isolate's lifetime, so its cache outlives a request. */
export function discordOwners(options: Omit<DiscordOwnersOptions, "fetch" | "now">): DiscordOwners {
  const key = JSON.stringify([options.configured, options.apiBase ?? "", options.botToken ?? ""]);
  let owners = perIsolate.get(key);
  if (!owners) {
    owners = createDiscordOwners(options);
    perIsolate.set(key, owners);
  }
  return owners;
}
