// wrangler.toml sends the API's paths to the worker before any static-asset lookup
// (assets.run_worker_first). A route left out still works (it falls through to the worker after
// the lookup) but pays for the lookup on every call; a pattern that caught a page would run the
// worker for it. Both mistakes are caught here, against the routes the worker really serves.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, json } from "../helpers/api.ts";

/** Cloudflare's run_worker_first patterns: `*` matches any run of characters, `/` included. */
function matcher(patterns: string[]): (path: string) => boolean {
  const expressions = patterns.map(
    (pattern) =>
      new RegExp(
        `^${pattern
          .split("*")
          .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
          .join(".*")}$`,
      ),
  );
  return (path) => expressions.some((expression) => expression.test(path));
}

describe("wrangler.toml run_worker_first", () => {
  const patterns = JSON.parse(env.TEST_RUN_WORKER_FIRST ?? "null") as unknown;

  it("lists every API route and none of the playground's files", async () => {
    expect(Array.isArray(patterns)).toBe(true);
    const workerFirst = matcher(patterns as string[]);
    const document = (await json(await api("GET", "/openapi.json", { token: null }))) as {
      paths: Record<string, unknown>;
    };
    const documented = Object.keys(document.paths).map((path) => path.replace(/\{[^}]+\}/g, "x"));
    expect(documented.length).toBeGreaterThan(20);
    // Routes the document leaves out: the document itself, its viewer, stored media, and each
    // agent's MCP server (JSON-RPC over one path).
    const undocumented = ["/openapi.json", "/docs", "/media/agents/x/y.png", "/agents/x/mcp"];
    expect([...documented, ...undocumented].filter((path) => !workerFirst(path))).toEqual([]);
    const pages = [
      "/",
      "/index.html",
      "/playground.js",
      "/playground-usage.js",
      "/playground-inspector.js",
      "/playground.css",
      "/vendor/swagger-ui-dist/swagger-ui.css",
    ];
    expect(pages.filter(workerFirst)).toEqual([]);
  });
});
