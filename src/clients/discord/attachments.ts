// Files attached to a Discord message: copied from Discord's CDN into R2 (checked by content, not
// by name or declared type, and by size while downloading), then given to the model: text files
// as quoted data in the message, images as image inputs. A resumed turn finds its copies in R2 and
// downloads nothing twice. Source URLs carry Discord's signed query string: it never reaches R2
// metadata, an error or the model. Downloads go through the guarded fetch (src/net/): Discord's
// hosts only, https and public, redirects re-checked, size and time capped while reading.
import type { Env } from "../../env.ts";
import { OutboundRequestError, type FetchCaps } from "../../net/guarded-fetch.ts";
import { outboundFetch } from "../../net/outbound.ts";
import { dataUrl } from "../../media/data-url.ts";
import { safeFileName, sniffChatFile } from "../../media/sniff.ts";
import { storeMedia } from "../../media/store.ts";
import type { Attachment } from "../../runtime/ports/memory.ts";

export const MAX_ATTACHMENTS = 4;
/** Where Discord serves attachments (besides DISCORD_API_BASE's host, for stand-ins). */
export const DISCORD_ATTACHMENT_HOSTS = ["cdn.discordapp.com", "media.discordapp.net"];
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
export const MAX_TEXT_BYTES = 256 * 1024;
/** Images go to the model inline (base64); larger ones need a public URL we do not serve yet. */
export const MAX_INLINE_IMAGE_BYTES = 4 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 10_000;
/** One file: the largest we accept, within the download timeout. */
export const ATTACHMENT_CAPS: FetchCaps = {
  timeoutMs: DOWNLOAD_TIMEOUT_MS,
  maxBytes: MAX_IMAGE_BYTES,
  streams: false,
};

/** A file copied into R2 under `key`, read for the model. */
interface StoredAttachment {
  ok: true;
  title: string;
  key: string;
  contentType: string;
  size: number;
}

export type IngestedAttachment =
  | (StoredAttachment & { kind: "image"; dataUrl: string })
  | (StoredAttachment & { kind: "text"; text: string })
  | { ok: false; title: string; reason: string };

export interface IngestOptions {
  bucket: R2Bucket;
  /** R2 key prefix for this turn, e.g. `attachments/<agent>/<turn>`. */
  keyPrefix: string;
  /** Hosts files may be downloaded from (Discord's CDN): anything else is refused. */
  allowedHosts: string[];
  /** The guarded fetch (attachmentSource); a test may pass a stand-in. */
  fetch: typeof fetch;
}

/**
 * Where attachments come from in this deployment: Discord's CDN hosts, plus DISCORD_API_BASE's
 * host for a stand-in. The operator configured that origin, so the guard trusts it as it is
 * (http, a local name); every other URL, and every redirect, is checked.
 */
export function attachmentSource(env: Env): Pick<IngestOptions, "allowedHosts" | "fetch"> {
  const api = env.DISCORD_API_BASE ? new URL(env.DISCORD_API_BASE) : null;
  return {
    allowedHosts: [...DISCORD_ATTACHMENT_HOSTS, ...(api ? [api.host] : [])],
    fetch: outboundFetch(env, ATTACHMENT_CAPS, { trustedOrigins: api ? [api.origin] : [] }),
  };
}

export async function ingestAttachments(
  attachments: Attachment[],
  options: IngestOptions,
): Promise<IngestedAttachment[]> {
  const results: IngestedAttachment[] = [];
  for (const [index, attachment] of attachments.entries()) {
    const title = safeFileName(attachment.title ?? `attachment-${index + 1}`);
    if (index >= MAX_ATTACHMENTS) {
      results.push({
        ok: false,
        title,
        reason: `only ${MAX_ATTACHMENTS} attachments are read per message`,
      });
      continue;
    }
    try {
      results.push(
        await ingestOne(attachment, title, `${options.keyPrefix}/${index}-${title}`, options),
      );
    } catch (error) {
      results.push({
        ok: false,
        title,
        reason: error instanceof AttachmentRefused ? error.message : "it could not be downloaded",
      });
    }
  }
  return results;
}

class AttachmentRefused extends Error {}

async function ingestOne(
  attachment: Attachment,
  title: string,
  key: string,
  options: IngestOptions,
): Promise<IngestedAttachment> {
  const stored = await options.bucket.get(key);
  const bytes = stored
    ? new Uint8Array(await stored.arrayBuffer())
    : await download(attachment.url, options);
  const kind = sniffChatFile(bytes, title, attachment.contentType);
  if (!kind)
    throw new AttachmentRefused(
      "only JPEG, PNG, GIF and WebP images and UTF-8 text files are accepted",
    );
  const limit = kind.kind === "image" ? MAX_IMAGE_BYTES : MAX_TEXT_BYTES;
  if (bytes.byteLength > limit)
    throw new AttachmentRefused(
      `it is larger than ${limit / 1024 / 1024 >= 1 ? `${limit / 1024 / 1024} MiB` : `${limit / 1024} KiB`}`,
    );
  if (!stored)
    await storeMedia(options.bucket, key, bytes, kind.contentType, {
      filename: title,
      source: new URL(attachment.url).host,
    });
  const base = {
    ok: true as const,
    title,
    key,
    contentType: kind.contentType,
    size: bytes.byteLength,
  };
  if (kind.kind === "text") return { ...base, kind: "text", text: new TextDecoder().decode(bytes) };
  if (bytes.byteLength > MAX_INLINE_IMAGE_BYTES)
    throw new AttachmentRefused(
      `images over ${MAX_INLINE_IMAGE_BYTES / 1024 / 1024} MiB cannot be shown to the model yet`,
    );
  return { ...base, kind: "image", dataUrl: dataUrl(kind.contentType, bytes) };
}

async function download(url: string, options: IngestOptions): Promise<Uint8Array> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AttachmentRefused("its address is not a URL");
  }
  if (
    !options.allowedHosts.includes(parsed.host) ||
    (parsed.protocol !== "https:" && parsed.protocol !== "http:")
  ) {
    throw new AttachmentRefused("it is not hosted by Discord");
  }
  const tooLarge = `it is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MiB`;
  try {
    const response = await options.fetch(url);
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new AttachmentRefused(`Discord answered ${response.status} for it`);
    }
    // The guard holds the size cap while reading, whatever Content-Length said.
    return new Uint8Array(await response.arrayBuffer());
  } catch (error) {
    if (error instanceof OutboundRequestError && error.failure === "too_large")
      throw new AttachmentRefused(tooLarge);
    if (error instanceof OutboundRequestError && error.failure === "timeout")
      throw new AttachmentRefused(`it did not download within ${DOWNLOAD_TIMEOUT_MS / 1000} s`);
    throw error;
  }
}
