// Bearer-token check for the admin API. The token is compared as SHA-256 digests with a
// constant-time comparison (workerd's crypto.subtle.timingSafeEqual), so response timing does not
// reveal how much of a guess was right. With no ADMIN_TOKEN set, protected routes refuse to serve.
import type { MiddlewareHandler } from "hono";
import { loadConfig, type Env } from "../config.ts";
import { NotConfiguredError, UnauthorizedError } from "../runtime/errors.ts";

export function requireAdmin(): MiddlewareHandler<{ Bindings: Env }> {
  return async (c, next) => {
    const expected = loadConfig(c.env).adminToken;
    if (!expected) {
      throw new NotConfiguredError("ADMIN_TOKEN is not set; set it (wrangler secret put ADMIN_TOKEN, or .dev.vars locally) to use the API");
    }
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw new UnauthorizedError("send the API token as `Authorization: Bearer <token>`");
    if (!(await sameSecret(match[1], expected))) throw new UnauthorizedError("the bearer token is not valid");
    await next();
  };
}

async function sameSecret(given: string, expected: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(given)),
    crypto.subtle.digest("SHA-256", encoder.encode(expected)),
  ]);
  return crypto.subtle.timingSafeEqual(a, b);
}
