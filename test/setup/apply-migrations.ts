// Gives each test file an empty world: every binding's data deleted (D1, R2, Durable Objects and
// their alarms), the isolate's caches of what storage held forgotten, then the D1 migrations
// (read on the Node side by vitest.config.ts) applied. The workerd projects run their files one
// after another in one runtime (`isolate: false`), so this, not a new runtime per file, is what
// keeps one file's agents, rooms, settings and cached identities from the next.
import { applyD1Migrations, reset } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { forgetSlackBotIdentity } from "../../src/clients/slack/bot-identity.ts";
import { forgetMemberNames } from "../../src/clients/slack/member-names.ts";
import { forgetBotIdentity } from "../../src/clients/telegram/bot-identity.ts";
import { resetLocalVectorCache } from "../../src/db/memory/local-vector-index.ts";
import { resetRateCopies } from "../../src/rate-limits/admission.ts";
import { forgetPlacements } from "../../src/db/stores/agent-placement.ts";
import { databaseBinding, memoryDatabases } from "../../src/db/shards.ts";

if (!env.TEST_MIGRATIONS) throw new Error("TEST_MIGRATIONS binding missing: see vitest.config.ts");
// What a fresh isolate would not know: each of these mirrors storage or a stand-in's answers.
resetRateCopies();
resetLocalVectorCache();
forgetBotIdentity();
forgetSlackBotIdentity();
forgetMemberNames();
await reset();
forgetPlacements();
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// The memory databases of the projects that declare them (the `shards` project).
for (const name of memoryDatabases(env)) {
  await applyD1Migrations(databaseBinding(env, name), env.TEST_MIGRATIONS);
}
