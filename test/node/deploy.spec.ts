// `npm run deploy` against a stub `wrangler` first on PATH that records every call (and what it
// read on stdin) and plays a Cloudflare account's state, and a stand-in worker on loopback for the
// requests the script makes after deploying. A fresh account gets exactly the calls it needs; a
// second run overwrites nothing; --vectorize creates the index once, with the embedder's size.
// The admin token never rides on a command line and is printed only to a terminal: runs "on a
// terminal" go through util-linux `script`, which gives the deploy a pseudo-terminal.
import { execFile, execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

const run = promisify(execFile);
const SCRIPT = resolve("scripts/deploy.ts");

interface StubState {
  secrets: string[];
  vectorize: { dimensions: number; metadata: string[] } | null;
}
interface Call {
  args: string[];
  stdin: string;
}

// The stub: plays wrangler's answers from a state file and keeps that state up to date.
const STUB = `#!/usr/bin/env node
const fs = require("node:fs");
const args = process.argv.slice(2);
const state = JSON.parse(fs.readFileSync(process.env.STUB_STATE, "utf8"));
let stdin = "";
try { stdin = fs.readFileSync(0, "utf8"); } catch {}
fs.appendFileSync(process.env.STUB_LOG, JSON.stringify({ args, stdin }) + "\\n");
const save = () => fs.writeFileSync(process.env.STUB_STATE, JSON.stringify(state));
const [a, b] = args;
if (a === "deploy") console.log("Uploaded edge-agents\\nDeployed edge-agents triggers\\n  " + process.env.STUB_URL);
else if (a === "secret" && b === "list") console.log(JSON.stringify(state.secrets.map((name) => ({ name, type: "secret_text" }))));
else if (a === "secret" && b === "put") { state.secrets.push(args[2]); save(); }
else if (a === "vectorize" && b === "get") { if (!state.vectorize) { console.error("not found"); process.exit(1); } console.log(JSON.stringify({ name: args[2], config: { dimensions: state.vectorize.dimensions, metric: "cosine" } })); }
else if (a === "vectorize" && b === "create") { state.vectorize = { dimensions: Number(args.find((x) => x.startsWith("--dimensions=")).split("=")[1]), metadata: [] }; save(); }
else if (a === "vectorize" && b === "list-metadata-index") console.log(JSON.stringify((state.vectorize?.metadata ?? []).map((propertyName) => ({ propertyName, indexType: "String" }))));
else if (a === "vectorize" && b === "create-metadata-index") { state.vectorize.metadata.push(args.find((x) => x.startsWith("--propertyName=")).split("=")[1]); save(); }
else { console.error("stub: unexpected call " + args.join(" ")); process.exit(2); }
`;

let work: string;
let bin: string;
let server: Server;
let url: string;
let requests: string[] = [];
let authorizations: string[] = [];
let embedDimensions = 768;

beforeAll(async () => {
  bin = mkdtempSync(join(tmpdir(), "edge-agents-stub-"));
  writeFileSync(join(bin, "wrangler"), STUB);
  chmodSync(join(bin, "wrangler"), 0o755);
  // The worker as the script sees it after deploying.
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.headers.authorization) authorizations.push(req.headers.authorization);
    res.setHeader("content-type", "application/json");
    if (req.url === "/health")
      res.end(
        JSON.stringify({
          status: "ok",
          schema: { version: "0013_x.sql", error: null },
          model: { backend: "workers-ai" },
          embedding: { dimensions: embedDimensions },
        }),
      );
    else if (req.url?.startsWith("/agents"))
      res.end(JSON.stringify({ agents: [{ id: "ada" }, { id: "marlowe" }] }));
    else if (req.url === "/memories/embed")
      res.end(JSON.stringify({ embedded: 3, pending: false }));
    else {
      res.statusCode = 404;
      res.end("{}");
    }
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server?.close();
  rmSync(bin, { recursive: true, force: true });
});

beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), "edge-agents-deploy-"));
  copyFileSync("wrangler.toml", join(work, "wrangler.toml"));
  requests = [];
  authorizations = [];
  embedDimensions = 768;
  setState({ secrets: [], vectorize: null });
});

function setState(state: StubState): void {
  writeFileSync(join(work, "state.json"), JSON.stringify(state));
}

function calls(): Call[] {
  try {
    return readFileSync(join(work, "calls.log"), "utf8")
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Call);
  } catch {
    return [];
  }
}

function deployEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    STUB_STATE: join(work, "state.json"),
    STUB_LOG: join(work, "calls.log"),
    STUB_URL: "https://edge-agents.example.workers.dev",
  };
  for (const name of [
    "ADMIN_TOKEN",
    "OPENAI_API_KEY",
    "DISCORD_APPLICATION_ID",
    "DISCORD_BOT_TOKEN",
    "DISCORD_PUBLIC_KEY",
    "INSTAGRAM_ACCESS_TOKEN",
  ])
    delete env[name];
  return { ...env, ...extra };
}

/** The deploy with its output going to a pipe, as in CI. */
async function deploy(
  args: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [SCRIPT, "--url", url, ...args], {
      cwd: work,
      env: deployEnv(extraEnv),
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, out: failed.stdout + failed.stderr };
  }
}

const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const shellQuote = (word: string) => `'${word.replaceAll("'", "'\\''")}'`;

/**
 * The deploy on a pseudo-terminal (stdin and stdout both TTYs). When the output shows `prompt`,
 * `answer` is typed, followed by Enter.
 */
function deployOnTerminal(
  args: string[] = [],
  typing?: { prompt: string; answer: string },
): Promise<{ code: number; out: string }> {
  const command = [process.execPath, SCRIPT, "--url", url, ...args].map(shellQuote).join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], {
    cwd: work,
    env: deployEnv({}),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let typed = false;
  const collect = (chunk: Buffer) => {
    out += chunk.toString();
    if (typing && !typed && out.includes(typing.prompt)) {
      typed = true;
      child.stdin.write(`${typing.answer}\r`);
    }
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  return new Promise((done) => child.on("close", (code) => done({ code: code ?? 1, out })));
}

describe("npm run deploy", () => {
  it.skipIf(!hasScript)(
    "on a fresh account, on a terminal: deploys, sets ADMIN_TOKEN and SECRETS_KEY through stdin, prints the token once, wakes the worker",
    async () => {
      const { code, out } = await deployOnTerminal();
      expect(code, out).toBe(0);
      const made = calls();
      expect(made.map((c) => c.args.join(" "))).toEqual([
        "deploy",
        "secret list --format json",
        "secret put ADMIN_TOKEN",
        "secret put SECRETS_KEY",
      ]);
      const token = made[2]!.stdin;
      expect(token).toMatch(/^[0-9a-f]{48}$/);
      expect(made[3]!.stdin).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // The token is on the terminal once, and never on a command line.
      expect(out.split(token).length - 1).toBe(1);
      expect(made.every((c) => !c.args.join(" ").includes(token))).toBe(true);
      // Its first request applies the migrations and seeds the characters.
      expect(requests).toEqual(["GET /health"]);
    },
  );

  it("on a fresh account, off a terminal (CI): makes no admin token, prints none, and says how to set one", async () => {
    const { code, out } = await deploy();
    expect(code, out).toBe(0);
    expect(calls().map((c) => c.args.join(" "))).toEqual([
      "deploy",
      "secret list --format json",
      "secret put SECRETS_KEY",
    ]);
    // Nothing that looks like a token made here reaches the log.
    expect(out).not.toMatch(/[0-9a-f]{48}/);
    expect(out).toContain("ADMIN_TOKEN is not set on the worker");
    expect(out).toContain("npx wrangler secret put ADMIN_TOKEN");
    expect(out).toContain("Deployed; ADMIN_TOKEN is still to set");
  });

  it("on a fresh account, with ADMIN_TOKEN in the environment: puts that one through stdin and never prints it", async () => {
    const token = "operator-chosen-admin-token-0123456789";
    const { code, out } = await deploy([], { ADMIN_TOKEN: token });
    expect(code, out).toBe(0);
    const made = calls();
    expect(made.map((c) => c.args.join(" "))).toEqual([
      "deploy",
      "secret list --format json",
      "secret put ADMIN_TOKEN",
      "secret put SECRETS_KEY",
    ]);
    expect(made[2]!.stdin).toBe(token);
    expect(out).not.toContain(token);
    expect(out).toContain("Set ADMIN_TOKEN from this shell.");
  });

  it("refuses --token before touching the account: says to use ADMIN_TOKEN, never repeats the value", async () => {
    for (const args of [
      ["--token", "secret-on-argv-0123456789"],
      ["--token=secret-on-argv-0123456789"],
    ]) {
      const { code, out } = await deploy(args);
      expect(code).not.toBe(0);
      expect(out).toContain("--token is not accepted");
      expect(out).toContain("ADMIN_TOKEN");
      expect(out).not.toContain("secret-on-argv-0123456789");
    }
    expect(calls()).toEqual([]);
  });

  it("refuses an ADMIN_TOKEN the worker would refuse (under 16 characters) before deploying", async () => {
    const { code, out } = await deploy([], { ADMIN_TOKEN: "short-token" });
    expect(code).not.toBe(0);
    expect(out).toContain("shorter than 16 characters");
    expect(out).not.toContain("short-token");
    expect(calls()).toEqual([]);
  });

  it("run again: overwrites no secret and creates nothing", async () => {
    setState({ secrets: ["ADMIN_TOKEN", "SECRETS_KEY"], vectorize: null });
    const { code, out } = await deploy();
    expect(code, out).toBe(0);
    expect(calls().map((c) => c.args.join(" "))).toEqual(["deploy", "secret list --format json"]);
    expect(out).not.toContain("admin token");
  });

  it("--vectorize: creates the index with the embedder's size and its metadata indexes before any vector, binds it, redeploys, re-embeds", async () => {
    setState({ secrets: ["ADMIN_TOKEN", "SECRETS_KEY"], vectorize: null });
    const admin = { ADMIN_TOKEN: "admin-token-for-the-test" };
    const { code, out } = await deploy(["--vectorize"], admin);
    expect(code, out).toBe(0);
    expect(calls().map((c) => c.args.join(" "))).toEqual([
      "deploy",
      "secret list --format json",
      "vectorize get edge-agents-memories --json",
      "vectorize create edge-agents-memories --dimensions=768 --metric=cosine",
      "vectorize list-metadata-index edge-agents-memories --json",
      ...["agentId", "type", "roomId", "userId", "memoryId"].map(
        (p) =>
          `vectorize create-metadata-index edge-agents-memories --propertyName=${p} --type=string`,
      ),
      "deploy",
    ]);
    expect(readFileSync(join(work, "wrangler.toml"), "utf8")).toMatch(
      /\[\[vectorize\]\]\nbinding = "VECTORS"\nindex_name = "edge-agents-memories"/,
    );
    expect(requests.filter((r) => r === "POST /memories/embed")).toHaveLength(2);
    expect(new Set(authorizations)).toEqual(new Set(["Bearer admin-token-for-the-test"]));

    // Again: the index, its metadata indexes and the binding exist; nothing is made twice.
    const again = await deploy(["--vectorize"], admin);
    expect(again.code, again.out).toBe(0);
    const second = calls()
      .slice(11)
      .map((c) => c.args.join(" "));
    expect(second).toEqual([
      "deploy",
      "secret list --format json",
      "vectorize get edge-agents-memories --json",
      "vectorize list-metadata-index edge-agents-memories --json",
    ]);
  });

  it("--vectorize refuses an index of another size: never two dimensions in one index", async () => {
    setState({
      secrets: ["ADMIN_TOKEN", "SECRETS_KEY"],
      vectorize: { dimensions: 384, metadata: [] },
    });
    const { code, out } = await deploy(["--vectorize"]);
    expect(code).not.toBe(0);
    expect(out).toContain("holds 384 dimensions, the embedder gives 768");
    expect(calls().some((c) => c.args.includes("create-metadata-index"))).toBe(false);
  });

  it.skipIf(!hasScript)(
    "--vectorize on a terminal, without ADMIN_TOKEN: asks for the admin token and does not echo it",
    async () => {
      setState({
        secrets: ["ADMIN_TOKEN", "SECRETS_KEY"],
        vectorize: {
          dimensions: 768,
          metadata: ["agentId", "type", "roomId", "userId", "memoryId"],
        },
      });
      const typed = "typed-admin-token-0123456789";
      const { code, out } = await deployOnTerminal(["--vectorize"], {
        prompt: "Admin token",
        answer: typed,
      });
      expect(code, out).toBe(0);
      expect(out).not.toContain(typed);
      expect(new Set(authorizations)).toEqual(new Set([`Bearer ${typed}`]));
      expect(requests.filter((r) => r === "POST /memories/embed")).toHaveLength(2);
    },
  );
});
