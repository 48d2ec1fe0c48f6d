// `npm run mcp:conformance:server`: the official MCP conformance suite's server scenarios
// (@modelcontextprotocol/conformance) against one agent's MCP server, as a user would run them:
// the worker bundled as `wrangler deploy` ships it, in local workerd (bench/worker-harness.ts), a
// model stand-in on loopback so `chat` answers, and a loopback proxy that adds the agent's bearer
// token (the suite sends none). Every scenario runs; those for a capability the server does not
// declare are listed as not applicable with the reason (an agent is not the suite's "everything"
// server). Prints a table; exits 1 when an applicable scenario fails.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { startModelServer } from "../bench/model-server.ts";
import { createBenchAgent, startBenchWorker } from "../bench/worker-harness.ts";

const AGENT_ID = "conformance";

/**
 * Scenarios for what an agent's server does not offer, and why. Each still runs: one that starts
 * passing is reported, so this list does not go stale unnoticed.
 */
const NOT_APPLICABLE: Record<string, string> = {
  "logging-set-level": "declares no logging capability: a turn's log lines go to the operator",
  "completion-complete": "declares no completions: no prompt or resource template takes arguments",
  "tools-call-simple-text":
    "calls the suite's fixture tool test_simple_text; an agent's tools (chat...) are called by the SDK clients in test/surfaces/mcp-server*.test.ts",
  "tools-call-error":
    "calls the suite's fixture tool test_error_handling; an agent's failing tool answers isError (test/surfaces/mcp-server.test.ts)",
  "resources-read-text":
    "reads the suite's fixture test://static-text; an agent's resource is agent://<id>/character (read in test/surfaces/mcp-server.test.ts)",
  "dns-rebinding-protection":
    "its scope is a localhost server without authentication; every request here needs a bearer token, which a rebinding page cannot send",
  "tools-call-image": "its tools answer text and structured content only",
  "tools-call-audio": "its tools answer text and structured content only",
  "tools-call-embedded-resource": "its tools answer text and structured content only",
  "tools-call-mixed-content": "its tools answer text and structured content only",
  "tools-call-with-logging": "declares no logging capability",
  "tools-call-with-progress": "a turn is answered whole; no tool reports progress",
  "tools-call-sampling": "never asks the host's model: the agent has its own",
  "tools-call-elicitation": "never asks the host's user for input",
  "elicitation-sep1034-defaults": "never asks the host's user for input",
  "elicitation-sep1330-enums": "never asks the host's user for input",
  "json-schema-2020-12":
    "the suite's fixture tool (json_schema_2020_12_tool) is not one of an agent's",
  "resources-read-binary": "its one resource is JSON text",
  "resources-templates-read": "declares no resource templates",
  "resources-subscribe": "declares no subscriptions: the character changes through the REST API",
  "resources-unsubscribe": "declares no subscriptions",
  "prompts-list": "declares no prompts",
  "prompts-get-simple": "declares no prompts",
  "prompts-get-with-args": "declares no prompts",
  "prompts-get-embedded-resource": "declares no prompts",
  "prompts-get-with-image": "declares no prompts",
};

interface Check {
  id?: string;
  name?: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "SKIPPED" | "INFO";
  description?: string;
  errorMessage?: string;
}

const suiteCli = join(
  createRequire(import.meta.url).resolve("@modelcontextprotocol/conformance/package.json"),
  "..",
  "dist",
  "index.js",
);

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [suiteCli, ...args],
      { timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Forwards every request to the agent's MCP endpoint with the bearer token added. */
function startProxy(target: string, token: string): Promise<{ url: string; close(): void }> {
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers))
      if (typeof value === "string" && name !== "host" && name !== "content-length")
        headers.set(name, value);
    headers.set("authorization", `Bearer ${token}`);
    const method = request.method ?? "GET";
    const answer = await fetch(target, {
      method,
      headers,
      ...(method === "GET" || method === "HEAD" ? {} : { body: Buffer.concat(chunks) }),
    });
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (answer.body) for await (const chunk of answer.body) response.write(chunk);
    response.end();
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}/mcp`, close: () => server.close() });
    });
  });
}

async function scenarios(): Promise<string[]> {
  const listed = await run(["list", "--server"]);
  return [...listed.stdout.matchAll(/^\s+- ([a-z0-9-]+) /gm)].map((match) => match[1]!);
}

async function main(): Promise<void> {
  const model = await startModelServer();
  const worker = await startBenchWorker({
    OPENAI_API_KEY: "conformance",
    OPENAI_BASE_URL: `${model.url}/v1`,
    MODEL: "conformance-model",
  });
  const proxy = await startProxy(`${worker.base}/agents/${AGENT_ID}/mcp`, worker.token);
  const out = mkdtempSync(join(tmpdir(), "mcp-conformance-"));
  let unexpected = 0;
  try {
    await createBenchAgent(worker.call, { id: AGENT_ID });
    const rows: string[][] = [];
    for (const scenario of await scenarios()) {
      const dir = join(out, scenario);
      await run(["server", "--url", proxy.url, "--scenario", scenario, "-o", dir]);
      const checks = readChecks(dir);
      const failed = checks.filter((check) => check.status === "FAILURE");
      const passed = checks.length > 0 && failed.length === 0;
      const reason = NOT_APPLICABLE[scenario];
      let result: string;
      if (reason) result = passed ? "pass (listed as not applicable)" : "not applicable";
      else if (passed) result = "pass";
      else {
        result = "FAIL";
        unexpected += 1;
      }
      const note = reason ?? failed.map((check) => check.errorMessage ?? check.name).join("; ");
      rows.push([scenario, result, note]);
    }
    printTable(["scenario", "result", "note"], rows);
    const applicable = rows.filter((row) => !NOT_APPLICABLE[row[0]!]).length;
    console.log(
      `\n${applicable} applicable scenarios, ${applicable - unexpected} passed; ` +
        `${rows.length - applicable} not applicable (the reason beside each)`,
    );
  } finally {
    proxy.close();
    await worker.stop();
    await model.close();
    rmSync(out, { recursive: true, force: true });
  }
  process.exit(unexpected > 0 ? 1 : 0);
}

/** The checks a scenario's run saved (the suite writes them under a directory of its own). */
function readChecks(dir: string): Check[] {
  const found: Check[] = [];
  const walk = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name === "checks.json")
        found.push(...(JSON.parse(readFileSync(full, "utf8")) as Check[]));
    }
  };
  try {
    walk(dir);
  } catch {
    // No results: the scenario did not run; reported as a failure.
  }
  return found;
}

function printTable(head: string[], rows: string[][]): void {
  const widths = head.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => row[i]!.length)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(line(head));
  console.log(`|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`);
  for (const row of rows) console.log(line(row));
}

await main();
