// Issue 22, the media low ones: a signed media link serves its file so that no browser sniffs it
// into a page (nosniff, inline with a safe name), and no link lives longer than
// MAX_MEDIA_URL_LIFETIME_S, whether signed here or presented with a far-off expiry.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api } from "../helpers/api.ts";
import { inlineDisposition } from "../../src/http/routes/media.ts";
import { MAX_MEDIA_URL_LIFETIME_S, signMediaUrl } from "../../src/media/signed-url.ts";

const SECRETS_KEY = "test-secrets-key-0123456789abcdef0123456789";
const DAY_S = 24 * 3600;
const nowS = () => Math.floor(Date.now() / 1000);

async function link(key: string, expiresAt: number, signedAt = nowS()): Promise<string> {
  const url = new URL(
    await signMediaUrl("https://agents.test", key, expiresAt, SECRETS_KEY, signedAt),
  );
  return `${url.pathname}${url.search}`;
}

const get = (path: string, headers: Record<string, string> = {}) =>
  api("GET", path, { token: null, headers });

describe("media answers cannot be sniffed into a page", () => {
  it("an uploaded file is served nosniff and inline under a safe name, in every kind of answer", async () => {
    // Looks like HTML whatever its stored type says: the browser must keep to the declared type.
    await env.MEDIA.put(
      "media/agent-a/post-9/photo.jpg",
      "<html><script>alert(1)</script></html>",
      { httpMetadata: { contentType: "image/jpeg" } },
    );
    const path = await link("media/agent-a/post-9/photo.jpg", nowS() + 600);

    const whole = await get(path);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("x-content-type-options")).toBe("nosniff");
    expect(whole.headers.get("content-disposition")).toBe('inline; filename="photo.jpg"');
    expect(whole.headers.get("content-security-policy")).toContain("sandbox");
    const etag = whole.headers.get("etag")!;
    await whole.arrayBuffer();

    const part = await get(path, { range: "bytes=0-5" });
    expect(part.status).toBe(206);
    expect(part.headers.get("x-content-type-options")).toBe("nosniff");
    expect(part.headers.get("content-disposition")).toBe('inline; filename="photo.jpg"');
    await part.arrayBuffer();

    const same = await get(path, { "if-none-match": etag });
    expect(same.status).toBe(304);
    expect(same.headers.get("x-content-type-options")).toBe("nosniff");

    const refused = await get(
      path.replace(/sig=(.)/, (_, c: string) => `sig=${c === "A" ? "B" : "A"}`),
    );
    expect(refused.status).toBe(403);
    expect(refused.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("names the file only with characters safe in a quoted header value", () => {
    expect(inlineDisposition("media/a/b/clip.mp4")).toBe('inline; filename="clip.mp4"');
    expect(inlineDisposition('media/a/"evil";\r\nx.html')).toBe(
      'inline; filename="evil____x.html"',
    );
    expect(inlineDisposition("media/a/.hidden")).toBe('inline; filename="hidden"');
    expect(inlineDisposition("media/a/")).toBe('inline; filename="file"');
  });
});

describe("a media link lives at most MAX_MEDIA_URL_LIFETIME_S", () => {
  it("signing refuses a link that would outlive the cap", async () => {
    await expect(
      link("media/agent-a/post-9/photo.jpg", nowS() + MAX_MEDIA_URL_LIFETIME_S + 60),
    ).rejects.toThrow(/at most/);
    await expect(
      link("media/agent-a/post-9/photo.jpg", nowS() + MAX_MEDIA_URL_LIFETIME_S - 60),
    ).resolves.toContain("sig=");
  });

  it("a correctly signed link whose expiry is further off than the cap is refused", async () => {
    await env.MEDIA.put(
      "media/agent-a/post-10/photo.jpg",
      new Uint8Array([0xff, 0xd8, 0xff, 0xd9]),
      { httpMetadata: { contentType: "image/jpeg" } },
    );
    // Signed with a clock two days ahead: a valid signature over an expiry eight days away.
    const far = await link(
      "media/agent-a/post-10/photo.jpg",
      nowS() + 8 * DAY_S,
      nowS() + 2 * DAY_S,
    );
    const response = await get(far);
    expect(response.status).toBe(403);
    expect((await response.json()) as unknown).toMatchObject({ error: { code: "forbidden" } });
    // Within the cap, the same object is served.
    expect(
      (await get(await link("media/agent-a/post-10/photo.jpg", nowS() + 6 * DAY_S))).status,
    ).toBe(200);
  });
});
