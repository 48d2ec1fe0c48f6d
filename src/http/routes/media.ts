// GET /media/<key>?exp=&sig=: an R2 object behind a signed, expiring URL (src/media/signed-url.ts).
// No bearer token: the signature is the permission, checked before the object is looked up, so a
// wrong or expired link learns nothing about what exists. Serves the stored content type and ETag,
// answers If-None-Match with 304 and a single byte range with 206 (Meta fetches video in ranges).
// Every answer says `nosniff` and files come `inline` with a safe name and a sandboxing CSP, so an
// uploaded file is never guessed into a page that runs in this origin.
import { OpenAPIHono, z } from "@hono/zod-openapi";
import { loadConfig } from "../../config.ts";
import { checkMediaSignature, MEDIA_KEY } from "../../media/signed-url.ts";
import {
  AppError,
  ForbiddenError,
  NotConfiguredError,
  NotFoundError,
} from "../../runtime/util/errors.ts";
import type { AppEnv } from "../app-env.ts";
import { errorContent } from "../schemas.ts";

/** `inline` with the key's last segment as the name, reduced to characters safe in a quoted header value. */
export function inlineDisposition(key: string): string {
  const name = (key.split("/").pop() ?? "").replace(/[^A-Za-z0-9._-]/g, "_").replace(/^[._]+/, "");
  return `inline; filename="${name || "file"}"`;
}

export function mediaRoutes(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use("/media/*", async (c, next) => {
    await next();
    // Files and errors alike: a browser must not second-guess the declared type (RFC 9110 8.3,
    // Fetch's X-Content-Type-Options).
    c.res.headers.set("x-content-type-options", "nosniff");
  });
  app.openAPIRegistry.registerPath({
    method: "get",
    path: "/media/{key}",
    summary: "An uploaded file, through a signed link that expires (no bearer token)",
    request: {
      params: z.object({
        key: z.string().openapi({ description: "The object's key; may contain '/'" }),
      }),
      query: z.object({
        exp: z.string().openapi({ description: "Expiry, Unix seconds" }),
        sig: z.string().openapi({ description: "HMAC-SHA256 of key and expiry, base64url" }),
      }),
    },
    responses: {
      200: { description: "The file, with its content type and ETag" },
      206: { description: "The requested byte range" },
      304: { description: "Not modified (If-None-Match)" },
      403: errorContent("Missing, wrong or expired signature"),
      404: errorContent("No such file"),
      416: errorContent("The range is outside the file"),
    },
  });

  app.get("/media/:key{.+}", async (c) => {
    const secretsKey = loadConfig(c.env).secretsKey;
    if (!secretsKey)
      throw new NotConfiguredError("SECRETS_KEY is not set, so no media link can be checked");
    let key: string;
    try {
      key = decodeURIComponent(c.req.param("key"));
    } catch {
      throw new ForbiddenError("this media link is not valid");
    }
    const exp = c.req.query("exp") ?? "";
    const sig = c.req.query("sig") ?? "";
    const check = MEDIA_KEY.test(key)
      ? await checkMediaSignature(key, exp, sig, secretsKey, Math.floor(Date.now() / 1000))
      : "invalid";
    if (check === "expired") throw new ForbiddenError("this media link has expired");
    if (check !== "valid") throw new ForbiddenError("this media link is not valid");

    const headers = c.req.raw.headers;
    const range = parseRange(c.req.header("range"));
    let object: R2Object | R2ObjectBody | null;
    try {
      object = await c.env.MEDIA.get(key, { onlyIf: headers, ...(range ? { range } : {}) });
    } catch (error) {
      // R2 refuses a range that starts past the end; answer 416 with the size, as RFC 9110 asks.
      const head = range ? await c.env.MEDIA.head(key) : null;
      if (!head || !range || !("offset" in range) || (range.offset ?? 0) < head.size) throw error;
      c.header("content-range", `bytes */${head.size}`);
      throw new AppError(
        "validation",
        416,
        `the range starts past the end of the file (${head.size} bytes)`,
      );
    }
    if (!object) throw new NotFoundError("no such media file");
    const out = new Headers();
    object.writeHttpMetadata(out);
    out.set("etag", object.httpEtag);
    out.set("accept-ranges", "bytes");
    out.set("content-disposition", inlineDisposition(key));
    // Opened directly, the file runs nothing: no scripts, no plugins, its own opaque origin.
    out.set("content-security-policy", "default-src 'none'; sandbox");
    const remaining = Math.max(0, Number(exp) - Math.floor(Date.now() / 1000));
    out.set("cache-control", `private, max-age=${Math.min(remaining, 3600)}`);
    if (!("body" in object)) return new Response(null, { status: 304, headers: out });
    if (range && object.range) {
      const { offset, length } = resolved(object.range, object.size);
      if (length <= 0) {
        throw new AppError(
          "validation",
          416,
          `the range is outside the file (${object.size} bytes)`,
        );
      }
      out.set("content-range", `bytes ${offset}-${offset + length - 1}/${object.size}`);
      out.set("content-length", String(length));
      return new Response(object.body, { status: 206, headers: out });
    }
    out.set("content-length", String(object.size));
    return new Response(object.body, { status: 200, headers: out });
  });
  return app;
}

/** One `bytes=` range; several ranges or a malformed header are ignored (the whole file is served). */
function parseRange(header: string | undefined): R2Range | null {
  const match = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!match || (match[1] === "" && match[2] === "")) return null;
  if (match[1] === "") return { suffix: Number(match[2]) };
  const offset = Number(match[1]);
  if (match[2] === "") return { offset };
  const end = Number(match[2]);
  return end >= offset ? { offset, length: end - offset + 1 } : null;
}

function resolved(range: R2Range, size: number): { offset: number; length: number } {
  if ("suffix" in range && range.suffix !== undefined) {
    const length = Math.min(range.suffix, size);
    return { offset: size - length, length };
  }
  const offset = "offset" in range && range.offset !== undefined ? range.offset : 0;
  const length =
    "length" in range && range.length !== undefined
      ? Math.min(range.length, size - offset)
      : size - offset;
  return { offset, length };
}
