import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../src/config.ts";
import {
  applicationOwners,
  createDiscordOwners,
  OWNERS_CACHE_MS,
  OWNERS_RETRY_MS,
} from "../../../src/clients/discord/owners.ts";
import { requiredBindings } from "../../helpers/bindings.ts";

const API = "http://discord.test/api/v10";

function team(members: Array<{ id: string; role: string; state?: number }>) {
  return {
    id: "100000000000000001",
    // For a team's app, `owner` is a synthetic user standing for the team.
    owner: { id: "300000000000000009", username: "team300000000000000009" },
    team: {
      id: "300000000000000009",
      owner_user_id: "300000000000000001",
      members: members.map((member) => ({
        membership_state: member.state ?? 2,
        role: member.role,
        team_id: "300000000000000009",
        user: { id: member.id, username: "x" },
      })),
    },
  };
}

/** A fetch that answers `GET /applications/@me` from a script and counts the requests. */
function applicationApi(answer: () => Response | Promise<Response>) {
  const requests: Request[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    requests.push(new Request(input, init));
    return answer();
  };
  return { fetch, requests };
}

describe("owners of the application (GET /applications/@me)", () => {
  it("is the app's owner for a personal app", () => {
    expect(
      applicationOwners({
        id: "1",
        owner: { id: "200000000000000001", username: "me" },
        team: null,
      }),
    ).toEqual(["200000000000000001"]);
  });

  it("is the team's owner and its accepted admins for a team's app; not developers, read-only members, invitees or the team's synthetic user", () => {
    const owners = applicationOwners(
      team([
        { id: "300000000000000002", role: "admin" },
        { id: "300000000000000003", role: "developer" },
        { id: "300000000000000004", role: "read_only" },
        { id: "300000000000000005", role: "admin", state: 1 },
      ]),
    );
    expect(owners.sort()).toEqual(["300000000000000001", "300000000000000002"]);
  });

  it("asks Discord with the bot token, once for concurrent checks, and trusts the answer for OWNERS_CACHE_MS", async () => {
    let now = 1_000_000;
    const discord = applicationApi(() =>
      Response.json(team([{ id: "300000000000000002", role: "admin" }])),
    );
    const owners = createDiscordOwners({
      configured: [],
      apiBase: API,
      botToken: "bot-token",
      fetch: discord.fetch,
      now: () => now,
    });
    expect(
      await Promise.all([
        owners.isOwner("300000000000000001"),
        owners.isOwner("300000000000000002"),
        owners.isOwner("999"),
      ]),
    ).toEqual([true, true, false]);
    expect(discord.requests).toHaveLength(1);
    expect(discord.requests[0]!.url).toBe(`${API}/applications/@me`);
    expect(discord.requests[0]!.headers.get("authorization")).toBe("Bot bot-token");
    now += OWNERS_CACHE_MS - 1;
    await owners.isOwner("999");
    expect(discord.requests).toHaveLength(1);
    now += 1;
    await owners.isOwner("999");
    expect(discord.requests).toHaveLength(2);
  });

  it("falls back to DISCORD_OWNER_IDS alone when Discord fails, and asks again after OWNERS_RETRY_MS", async () => {
    let now = 5_000_000;
    const answers: Array<() => Response> = [
      () => new Response("boom", { status: 500 }),
      () => {
        throw new TypeError("network down");
      },
      () => Response.json({ owner: { id: "not a snowflake" } }),
      () => Response.json({ owner: { id: "200000000000000001", username: "me" }, team: null }),
    ];
    const discord = applicationApi(() => answers.shift()!());
    const owners = createDiscordOwners({
      configured: ["400000000000000001"],
      apiBase: API,
      botToken: "bot-token",
      fetch: discord.fetch,
      now: () => now,
    });
    for (let failure = 1; failure <= 3; failure += 1) {
      expect(await owners.isOwner("200000000000000001")).toBe(false);
      expect(await owners.isOwner("400000000000000001")).toBe(true);
      expect(discord.requests).toHaveLength(failure);
      now += OWNERS_RETRY_MS;
    }
    expect(await owners.isOwner("200000000000000001")).toBe(true);
  });

  it("without a bot token asks nobody, and only DISCORD_OWNER_IDS are owners", async () => {
    const discord = applicationApi(() =>
      Response.json({ owner: { id: "200000000000000001" }, team: null }),
    );
    const owners = createDiscordOwners({
      configured: ["400000000000000001"],
      apiBase: API,
      fetch: discord.fetch,
    });
    expect(await owners.isOwner("400000000000000001")).toBe(true);
    expect(await owners.isOwner("200000000000000001")).toBe(false);
    expect(discord.requests).toHaveLength(0);
  });
});

describe("DISCORD_OWNER_IDS", () => {
  const config = (value: string) => loadConfig({ ...requiredBindings(), DISCORD_OWNER_IDS: value });

  it("is a comma list of Discord user ids, empty by default", () => {
    expect(config(" 400000000000000001, 400000000000000002 ,").discordOwnerIds).toEqual([
      "400000000000000001",
      "400000000000000002",
    ]);
    expect(config("").discordOwnerIds).toEqual([]);
  });

  it("turns Discord off for anything else, naming the variable, and gives no one ownership", () => {
    const malformed = config("400000000000000001,@dana");
    expect(malformed.surfacesOff.discord).toMatch(
      /^DISCORD_OWNER_IDS\S* must be a comma list of Discord user ids/,
    );
    expect(malformed.discordOwnerIds).toEqual([]);
  });
});
