// What Instagram accepts, checked by content, never by file name: JPEG photos (the only image
// format its API takes) of at most 8 MiB with an aspect ratio between 4:5 and 1.91:1, read from the
// JPEG's frame header; MP4 videos (an ISO-BMFF `ftyp` box) for reels. A JPEG without its end
// marker is treated as truncated. Captions: at most 2,200 characters and 30 hashtags.
// Pure functions over bytes; the file type itself comes from sniff.ts, shared with attachments.
import { describeType, sniffType } from "./sniff.ts";

export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
/** Reels can be long; a Worker request body is capped at 100 MB on most plans. */
export const MAX_VIDEO_BYTES = 100 * 1024 * 1024;
/** One upload request: ten 8 MiB photos, or a video; what a Worker accepts on most plans. */
export const MAX_UPLOAD_BODY_BYTES = 100 * 1024 * 1024;
export const MIN_ASPECT_RATIO = 4 / 5;
export const MAX_ASPECT_RATIO = 1.91;
export const MAX_CAPTION_CHARS = 2_200;
export const MAX_HASHTAGS = 30;

export type MediaCheck =
  | { ok: true; kind: "image"; contentType: "image/jpeg"; width: number; height: number }
  | { ok: true; kind: "video"; contentType: "video/mp4" }
  | { ok: false; reason: string };

export function checkMedia(bytes: Uint8Array, name = "the file"): MediaCheck {
  if (bytes.length === 0) return { ok: false, reason: `${name} is empty` };
  const type = sniffType(bytes);
  if (type === "image/jpeg") {
    if (bytes.length > MAX_IMAGE_BYTES) return { ok: false, reason: `${name} is ${bytes.length} bytes; Instagram takes images of at most ${MAX_IMAGE_BYTES} bytes (8 MiB)` };
    const size = jpegSize(bytes);
    if (!size) return { ok: false, reason: `${name} is not a complete JPEG (no frame header found)` };
    if (!hasEndMarker(bytes)) return { ok: false, reason: `${name} is a truncated JPEG (it does not end with the end-of-image marker)` };
    const ratio = size.width / size.height;
    if (ratio < MIN_ASPECT_RATIO - 1e-3 || ratio > MAX_ASPECT_RATIO + 1e-3) {
      return { ok: false, reason: `${name} is ${size.width}x${size.height} (aspect ratio ${ratio.toFixed(2)}:1); Instagram takes 4:5 (0.80) to 1.91:1` };
    }
    return { ok: true, kind: "image", contentType: "image/jpeg", ...size };
  }
  if (type === "video/mp4") {
    if (bytes.length > MAX_VIDEO_BYTES) return { ok: false, reason: `${name} is ${bytes.length} bytes; videos may be at most ${MAX_VIDEO_BYTES} bytes` };
    return { ok: true, kind: "video", contentType: "video/mp4" };
  }
  return { ok: false, reason: `${name} is ${describeType(type)}; Instagram takes JPEG photos and MP4 videos only` };
}

export function checkCaption(caption: string): string | null {
  const chars = [...caption].length;
  if (chars > MAX_CAPTION_CHARS) return `the caption has ${chars} characters; Instagram allows ${MAX_CAPTION_CHARS}`;
  const hashtags = caption.match(/(^|\s)#[\p{L}\p{N}_]+/gu)?.length ?? 0;
  if (hashtags > MAX_HASHTAGS) return `the caption has ${hashtags} hashtags; Instagram allows ${MAX_HASHTAGS}`;
  return null;
}

function hasEndMarker(b: Uint8Array): boolean {
  // Some encoders pad after EOI; look in the last few bytes.
  for (let i = b.length - 2; i >= Math.max(2, b.length - 64); i--) if (b[i] === 0xff && b[i + 1] === 0xd9) return true;
  return false;
}

/** Walks the JPEG's marker segments to the first start-of-frame (SOF0-SOF15 except DHT, JPG, DAC). */
function jpegSize(b: Uint8Array): { width: number; height: number } | null {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return null;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      i += 2;
      continue;
    }
    const length = (b[i + 2]! << 8) | b[i + 3]!;
    if (length < 2) return null;
    const isFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isFrame) {
      if (i + 9 > b.length) return null;
      const height = (b[i + 5]! << 8) | b[i + 6]!;
      const width = (b[i + 7]! << 8) | b[i + 8]!;
      return width > 0 && height > 0 ? { width, height } : null;
    }
    if (marker === 0xda) return null; // start of scan before any frame header
    i += 2 + length;
  }
  return null;
}
