// What a file is, from its first bytes: the one content check every upload path uses (Instagram
// uploads, Discord attachments). Names and declared types are never trusted for binary formats.

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
