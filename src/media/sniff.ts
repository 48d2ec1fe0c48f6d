// What a file is, from its first bytes: the one content check every upload path uses (Instagram
// uploads, the files people attach on Discord and Telegram, Telegram's voice notes). Names and
// declared types are never trusted for binary formats; a name only lets text be tried.

export type SniffedType =
  | "image/jpeg"
  | "image/png"
  | "image/gif"
  | "image/webp"
  | "video/mp4"
  | "application/pdf";

export function sniffType(bytes: Uint8Array): SniffedType | null {
  const starts = (...signature: number[]) => signature.every((byte, i) => bytes[i] === byte);
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (
    starts(0x47, 0x49, 0x46, 0x38) &&
    (bytes[4] === 0x37 || bytes[4] === 0x39) &&
    bytes[5] === 0x61
  )
    return "image/gif";
  if (
    starts(0x52, 0x49, 0x46, 0x46) &&
    bytes[8] === 0x57 &&
    bytes[9] === 0x45 &&
    bytes[10] === 0x42 &&
    bytes[11] === 0x50
  )
    return "image/webp";
  // ISO base media: a box size, then `ftyp`.
  if (
    bytes.length >= 12 &&
    bytes[4] === 0x66 &&
    bytes[5] === 0x74 &&
    bytes[6] === 0x79 &&
    bytes[7] === 0x70
  )
    return "video/mp4";
  if (starts(0x25, 0x50, 0x44, 0x46)) return "application/pdf";
  return null;
}

/** Words for an error message: "a PNG image", "a PDF document". */
export function describeType(type: SniffedType | null): string {
  switch (type) {
    case "image/jpeg":
      return "a JPEG image";
    case "image/png":
      return "a PNG image";
    case "image/gif":
      return "a GIF image";
    case "image/webp":
      return "a WebP image";
    case "video/mp4":
      return "an MP4 video";
    case "application/pdf":
      return "a PDF document";
    case null:
      return "not a file type we recognise";
  }
}

/** Names that may hold text; the bytes must still decode as UTF-8. */
const TEXT_EXTENSIONS = /\.(txt|md|markdown|csv|json|log|ya?ml|xml|html?|ts|js|py)$/i;

/** What a chat attachment is to the model: an image (by its bytes) or UTF-8 text. */
export interface ChatFileKind {
  kind: "image" | "text";
  contentType: string;
}

/**
 * A file attached in a chat: an image by its first bytes; text only when its name or declared type
 * says text and it decodes as UTF-8 without NULs; anything else (a PDF, an executable) is null.
 */
export function sniffChatFile(
  bytes: Uint8Array,
  name: string,
  declared?: string,
): ChatFileKind | null {
  const type = sniffType(bytes);
  if (type?.startsWith("image/")) return { kind: "image", contentType: type };
  if (type) return null;
  const looksText =
    TEXT_EXTENSIONS.test(name) ||
    (declared ?? "").startsWith("text/") ||
    declared === "application/json";
  if (!looksText || bytes.includes(0)) return null;
  try {
    new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return null;
  }
  return { kind: "text", contentType: "text/plain; charset=utf-8" };
}

/** A recording's format from its first bytes: what voice notes and audio files are. */
export function sniffAudioType(bytes: Uint8Array): string | null {
  const at = (offset: number, ...signature: number[]) =>
    signature.every((byte, i) => bytes[offset + i] === byte);
  if (at(0, 0x4f, 0x67, 0x67, 0x53)) return "audio/ogg"; // OggS: voice notes (Opus)
  if (at(0, 0x49, 0x44, 0x33) || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0))
    return "audio/mpeg";
  if (at(4, 0x66, 0x74, 0x79, 0x70)) return "audio/mp4"; // ftyp: m4a
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x41, 0x56, 0x45)) return "audio/wav";
  if (at(0, 0x66, 0x4c, 0x61, 0x43)) return "audio/flac";
  if (at(0, 0x1a, 0x45, 0xdf, 0xa3)) return "audio/webm";
  return null;
}

/** An attachment's name made safe for an R2 key and a note to the model. */
export function safeFileName(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[._]+/, "")
    .slice(0, 100);
  return cleaned || "file";
}
