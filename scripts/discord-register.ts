// `npm run discord:register [-- --guild <id>]`: registers the bot's slash commands (src/clients/
// discord/commands.ts) with Discord. With --guild they apply to that server at once; without, they
// are global (Discord may take a while to show changes). One bulk overwrite: running it again
// changes nothing. Reads DISCORD_APPLICATION_ID, DISCORD_BOT_TOKEN and DISCORD_API_BASE from the
// environment, else from .dev.vars; prints what was added, updated and removed.
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { COMMANDS } from "../src/clients/discord/commands.ts";
import { diffCommands } from "../src/clients/discord/register.ts";

const HELP = "Usage: npm run discord:register [-- --guild <server id>]";

function setting(name: string): string | undefined {
  const fromEnv = process.env[name]?.trim();
  if (fromEnv) return fromEnv;
  if (!existsSync(".dev.vars")) return undefined;
  const line = readFileSync(".dev.vars", "utf8")
    .split("\n")
    .find((l) => l.trim().startsWith(`${name}=`));
  const value = line
    ?.slice(line.indexOf("=") + 1)
    .trim()
    .replace(/^"(.*)"$/, "$1");
  return value || undefined;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { guild: { type: "string" }, help: { type: "boolean" } },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  if (values.guild !== undefined && !/^\d{1,20}$/.test(values.guild))
    throw new Error(`--guild takes a server id (digits)\n${HELP}`);
  const appId = setting("DISCORD_APPLICATION_ID");
  const token = setting("DISCORD_BOT_TOKEN");
  if (!appId || !/^\d{1,20}$/.test(appId))
    throw new Error(
      "DISCORD_APPLICATION_ID is not set (or not digits): copy it from the developer portal",
    );
  if (!token)
    throw new Error("DISCORD_BOT_TOKEN is not set: copy it from the developer portal's Bot page");
  const base = (setting("DISCORD_API_BASE") ?? "https://discord.com/api/v10").replace(/\/+$/, "");
  const path = values.guild
    ? `/applications/${appId}/guilds/${values.guild}/commands`
    : `/applications/${appId}/commands`;
  const headers = { authorization: `Bot ${token}`, "content-type": "application/json" };

  const current = await fetch(`${base}${path}`, { headers });
  if (!current.ok)
    throw new Error(
      `reading the registered commands failed: HTTP ${current.status} ${(await current.text()).slice(0, 300)}`,
    );
  const changes = diffCommands((await current.json()) as Record<string, unknown>[], COMMANDS);
  if (changes.added.length + changes.updated.length + changes.removed.length > 0) {
    const put = await fetch(`${base}${path}`, {
      method: "PUT",
      headers,
      body: JSON.stringify(COMMANDS),
    });
    if (!put.ok)
      throw new Error(
        `registering the commands failed: HTTP ${put.status} ${(await put.text()).slice(0, 300)}`,
      );
  }
  const where = values.guild ? `server ${values.guild}` : "all servers (global)";
  console.log(`Commands for ${where}:`);
  for (const [label, names] of Object.entries(changes) as Array<[string, string[]]>)
    if (names.length > 0)
      console.log(`  ${label.padEnd(9)} ${names.map((n) => `/${n}`).join(" ")}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
