// Signed media links: GET /media/<key>?exp=&sig= serves an R2 object while the HMAC is right and
// the link has not expired, with its type and ETag, conditional requests and byte ranges.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, json } from "../../helpers/api.ts";
import { signMediaUrl } from "../../../src/media/signed-url.ts";

const SECRETS_KEY = "test-secrets-key-0123456789abcdef0123456789";
const body = new Uint8Array(Array.from({ length: 1000 }, (_, i) => i % 256));

async function stored(key: string): Promise<void> {
  await env.MEDIA.put(key, body, { httpMetadata: { contentType: "image/jpeg" } });
}

async function link(key: string, expiresInS = 600): Promise<string> {
  const url = new URL(
    await signMediaUrl(
      "https://agents.test",
      key,
      Math.floor(Date.now() / 1000) + expiresInS,
      SECRETS_KEY,
    ),
  );
  return `${url.pathname}${url.search}`;
}

const get = (path: string, headers: Record<string, string> = {}) =>
  api("GET", path, { token: null, headers });

describe("signed media links", () => {
  it("serves the object with its content type, ETag and length, and 304 for a matching If-None-Match", async () => {
    await stored("media/agent-a/post-1/photo.jpg");
    const path = await link("media/agent-a/post-1/photo.jpg");
    const response = await get(path);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/jpeg");
    expect(response.headers.get("content-length")).toBe("1000");
    expect(response.headers.get("accept-ranges")).toBe("bytes");
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(body);
    const etag = response.headers.get("etag")!;
    expect(etag).toMatch(/^"/);
    expect((await get(path, { "if-none-match": etag })).status).toBe(304);
  });

  it("serves byte ranges with 206 and Content-Range, and 416 outside the file", async () => {
    await stored("media/agent-a/post-2/clip.mp4");
    const path = await link("media/agent-a/post-2/clip.mp4");
    const first = await get(path, { range: "bytes=0-99" });
    expect(first.status).toBe(206);
    expect(first.headers.get("content-range")).toBe("bytes 0-99/1000");
    expect(new Uint8Array(await first.arrayBuffer())).toEqual(body.slice(0, 100));
    const tail = await get(path, { range: "bytes=-10" });
    expect(tail.headers.get("content-range")).toBe("bytes 990-999/1000");
    expect(new Uint8Array(await tail.arrayBuffer())).toEqual(body.slice(990));
    const open = await get(path, { range: "bytes=900-" });
    expect(open.headers.get("content-range")).toBe("bytes 900-999/1000");
    expect((await get(path, { range: "bytes=5000-6000" })).status).toBe(416);
  });

  it("refuses a tampered, foreign or expired link with 403, before looking the object up", async () => {
    await stored("media/agent-a/post-3/photo.jpg");
    const good = await link("media/agent-a/post-3/photo.jpg");
    const tamperedSig = good.replace(/sig=(.)/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`);
    const otherKey = good.replace("post-3", "post-4");
    const longer = good.replace(/exp=(\d+)/, (_, exp: string) => `exp=${Number(exp) + 3600}`);
    for (const path of [
      tamperedSig,
      otherKey,
      longer,
      "/media/media/agent-a/post-3/photo.jpg",
      "/media/media/agent-a/post-3/photo.jpg?exp=1&sig=x",
    ]) {
      const response = await get(path);
      expect(response.status, path).toBe(403);
      expect((await json<{ error: { code: string } }>(response)).error.code).toBe("forbidden");
    }
    const expired = await get(await link("media/agent-a/post-3/photo.jpg", -5));
    expect(expired.status).toBe(403);
    expect((await json<{ error: { message: string } }>(expired)).error.message).toContain(
      "expired",
    );
    // A valid link to a missing object: 404, only once the signature has passed.
    expect((await get(await link("media/agent-a/none.jpg"))).status).toBe(404);
  });
});
