// The API reference at /docs (src/http/docs-page.ts) under its Content-Security-Policy: no page
// may frame it (clickjacking; CSP Level 2 `frame-ancestors`, and RFC 7034 X-Frame-Options for older
// browsers), and it runs only this worker's scripts: no inline script, nothing from another host.
import { describe, expect, it } from "vitest";
import { api } from "../helpers/api.ts";

/** The policy as directive -> sources. */
function directives(header: string | null): Map<string, string[]> {
  const parsed = new Map<string, string[]>();
  for (const part of (header ?? "").split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) parsed.set(name, sources);
  }
  return parsed;
}

describe("GET /docs", () => {
  it("may be framed by no page: frame-ancestors 'none' and X-Frame-Options DENY", async () => {
    const docs = await api("GET", "/docs", { token: null });
    expect(docs.status).toBe(200);
    const policy = directives(docs.headers.get("content-security-policy"));
    expect(policy.get("frame-ancestors")).toEqual(["'none'"]);
    expect(docs.headers.get("x-frame-options")).toBe("DENY");
  });

  it("runs scripts and styles from this worker only, and talks to nothing else", async () => {
    const docs = await api("GET", "/docs", { token: null });
    const policy = directives(docs.headers.get("content-security-policy"));
    expect(policy.get("default-src")).toEqual(["'self'"]);
    expect(policy.get("script-src")).toEqual(["'self'"]);
    expect(policy.get("style-src")).toEqual(["'self'"]);
    expect(policy.get("connect-src")).toEqual(["'self'"]);
    expect(policy.get("object-src")).toEqual(["'none'"]);
    expect(policy.get("base-uri")).toEqual(["'none'"]);
    expect(docs.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("has no inline script for that policy to block: the viewer starts from a file", async () => {
    const page = await (await api("GET", "/docs", { token: null })).text();
    const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => /src="([^"]+)"/.exec(m[1]!)?.[1])).toEqual([
      "/vendor/swagger-ui-dist/swagger-ui-bundle.js",
      "/docs-viewer.js",
    ]);
    expect(scripts.every((m) => m[2]!.trim() === "")).toBe(true);
    expect(page).not.toMatch(/\son[a-z]+=/i);
    expect(page).toContain('data-spec-url="/openapi.json"');
  });

  it("keeps the policy to /docs: an API answer is JSON and carries none of it", async () => {
    const health = await api("GET", "/health", { token: null });
    expect(health.headers.get("content-security-policy")).toBeNull();
  });
});
