// Makes sure .dev.vars exists for `npm run dev`, with a random ADMIN_TOKEN and SECRETS_KEY (and
// ALLOW_LOOPBACK_FETCH=true, for MCP servers on localhost; WORKERS_AI=false and VECTORIZE=false,
// which answer only remotely), and
// prints the admin token so the README's curl examples work at once. Never overwrites a value
// you set; only adds what is missing. .dev.vars is git-ignored: it holds local secrets.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";

const PATH = ".dev.vars";

const TEMPLATE = `# Local secrets for \`npm run dev\` (never committed). See docs/configuration.md.
# To talk to a real model, set an OpenAI-compatible endpoint:
# OPENAI_API_KEY=sk-...
# OPENAI_BASE_URL=http://localhost:11434/v1   # e.g. a local Ollama; leave unset for api.openai.com
# MODEL=gpt-4.1-mini
`;

const existing = existsSync(PATH) ? readFileSync(PATH, "utf8") : TEMPLATE;
const has = (name: string) => new RegExp(`^\\s*${name}\\s*=`, "m").test(existing);
const additions: string[] = [];
// Hex, not base64url: a token starting with "-" reads as an option to `--token` on command lines.
if (!has("ADMIN_TOKEN")) additions.push(`ADMIN_TOKEN=${randomBytes(24).toString("hex")}`);
if (!has("SECRETS_KEY")) additions.push(`SECRETS_KEY=${randomBytes(32).toString("base64url")}`);
// Local MCP servers (e.g. the SDK's examples on localhost) over http; never set this in production.
// MCP_ALLOW_LOOPBACK is its old name: a .dev.vars that has it keeps it.
if (!has("ALLOW_LOOPBACK_FETCH") && !has("MCP_ALLOW_LOOPBACK"))
  additions.push("ALLOW_LOOPBACK_FETCH=true");
// Workers AI answers only remotely (after `npx wrangler login`): off locally, so the dev server
// starts and runs offline. Set it to true to use Workers AI from a logged-in machine.
if (!has("WORKERS_AI")) additions.push("WORKERS_AI=false");
// Vectorize too answers only remotely: a VECTORS binding that `npm run deploy -- --vectorize`
// added to wrangler.toml is left unused locally, where the local index in D1 serves.
if (!has("VECTORIZE")) additions.push("VECTORIZE=false");
if (additions.length > 0 || !existsSync(PATH)) {
  writeFileSync(PATH, `${existing.trimEnd()}\n${additions.join("\n")}\n`);
}

const content = readFileSync(PATH, "utf8");
const token = /^\s*ADMIN_TOKEN\s*=\s*"?([^"\n]+)"?\s*$/m.exec(content)?.[1];
const model = /^\s*(OPENAI_API_KEY|OPENAI_BASE_URL)\s*=/m.test(content);
console.log(`\n  Local admin token (from ${PATH}):\n\n    export TOKEN=${token}\n`);
if (!model) {
  console.log(
    "  No model is configured yet: add OPENAI_API_KEY (and OPENAI_BASE_URL for another endpoint) to .dev.vars;",
  );
  console.log(
    "  until then a turn answers 503 model_not_configured (the message is still stored).\n",
  );
}
