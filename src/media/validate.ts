// What Instagram accepts, checked by content, never by file name: JPEG photos (the only image
// format its API takes) of at most 8 MiB with an aspect ratio between 4:5 and 1.91:1, read from the
// JPEG's frame header; MP4 videos (an ISO-BMFF `ftyp` box) for reels. A JPEG without its end
// marker is treated as truncated. Captions: at most 2,200 characters and 30 hashtags.
// Pure code over bytes, fed chunk by chunk as an upload streams in (MediaCheckStream) or given a
// whole file (checkMedia); the file type itself comes from sniff.ts, shared with attachments.
import { describeType, sniffType, type SniffedType } from "./sniff.ts";

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

/** Bytes sniffed before the type is decided: enough for the longest signature (MP4's `ftyp`). */
const SNIFF_BYTES = 12;
/** Some encoders pad after the end-of-image marker; it is looked for in the last bytes. */
const END_MARKER_WINDOW = 64;

/**
 * The content check fed as a file streams in: `push` each chunk in order and it answers with the
 * reason to refuse as soon as one is known (the type from the first bytes, the aspect ratio once
 * the frame header has arrived, the size cap as it is passed); `finish` gives the verdict at the
 * end (empty, truncated). Memory: a few dozen bytes, whatever the file's size.
 */
export class MediaCheckStream {
  private readonly name: string;
  private head: Uint8Array = new Uint8Array(0);
  private type: SniffedType | null | undefined;
  private readonly frame = new JpegFrameReader();
  private tail: Uint8Array = new Uint8Array(0);
  private total = 0;
  private problem: string | null = null;

  constructor(name = "the file") {
    this.name = name;
  }

  get bytes(): number {
    return this.total;
  }

  /** The kind of file, once the first bytes have shown it to be one Instagram takes. */
  get kind():
    | { kind: "image"; contentType: "image/jpeg" }
    | { kind: "video"; contentType: "video/mp4" }
    | null {
    if (this.type === "image/jpeg") return { kind: "image", contentType: "image/jpeg" };
    if (this.type === "video/mp4") return { kind: "video", contentType: "video/mp4" };
    return null;
  }

  push(chunk: Uint8Array): string | null {
    if (this.problem || chunk.length === 0) return this.problem;
    this.frame.feed(chunk, this.total);
    this.total += chunk.length;
    if (this.type === undefined) {
      this.head = joined(this.head, chunk.subarray(0, SNIFF_BYTES - this.head.length));
      if (this.head.length >= SNIFF_BYTES) this.type = sniffType(this.head);
    }
    this.tail =
      chunk.length >= END_MARKER_WINDOW
        ? chunk.slice(-END_MARKER_WINDOW)
        : joined(this.tail, chunk).slice(-END_MARKER_WINDOW);
    this.problem = this.type === undefined ? null : this.early();
    return this.problem;
  }

  finish(): MediaCheck {
    if (this.total === 0) return { ok: false, reason: `${this.name} is empty` };
    if (this.type === undefined) this.type = sniffType(this.head);
    const problem = this.problem ?? this.early();
    if (problem) return { ok: false, reason: problem };
    if (this.type === "video/mp4") return { ok: true, kind: "video", contentType: "video/mp4" };
    const size = this.frame.size;
    if (!size)
      return { ok: false, reason: `${this.name} is not a complete JPEG (no frame header found)` };
    if (!hasEndMarker(this.tail))
      return {
        ok: false,
        reason: `${this.name} is a truncated JPEG (it does not end with the end-of-image marker)`,
      };
    return { ok: true, kind: "image", contentType: "image/jpeg", ...size };
  }

  /** What can be refused before the end of the file (at the end, a missing frame header too). */
  private early(): string | null {
    const name = this.name;
    if (this.type === "image/jpeg") {
      if (this.total > MAX_IMAGE_BYTES)
        return `${name} is over ${MAX_IMAGE_BYTES} bytes; Instagram takes images of at most ${MAX_IMAGE_BYTES} bytes (8 MiB)`;
      const size = this.frame.size;
      if (size) {
        const ratio = size.width / size.height;
        if (ratio < MIN_ASPECT_RATIO - 1e-3 || ratio > MAX_ASPECT_RATIO + 1e-3) {
          return `${name} is ${size.width}x${size.height} (aspect ratio ${ratio.toFixed(2)}:1); Instagram takes 4:5 (0.80) to 1.91:1`;
        }
      } else if (this.frame.failed) {
        return `${name} is not a complete JPEG (no frame header found)`;
      }
      return null;
    }
    if (this.type === "video/mp4") {
      return this.total > MAX_VIDEO_BYTES
        ? `${name} is over ${MAX_VIDEO_BYTES} bytes; videos may be at most ${MAX_VIDEO_BYTES} bytes`
        : null;
    }
    return `${name} is ${describeType(this.type ?? null)}; Instagram takes JPEG photos and MP4 videos only`;
  }
}

/** The whole-file form of the check, for bytes already in memory. */
export function checkMedia(bytes: Uint8Array, name = "the file"): MediaCheck {
  const check = new MediaCheckStream(name);
  check.push(bytes);
  return check.finish();
}

export function checkCaption(caption: string): string | null {
  const chars = [...caption].length;
  if (chars > MAX_CAPTION_CHARS)
    return `the caption has ${chars} characters; Instagram allows ${MAX_CAPTION_CHARS}`;
  const hashtags = caption.match(/(^|\s)#[\p{L}\p{N}_]+/gu)?.length ?? 0;
  if (hashtags > MAX_HASHTAGS)
    return `the caption has ${hashtags} hashtags; Instagram allows ${MAX_HASHTAGS}`;
  return null;
}

function hasEndMarker(tail: Uint8Array): boolean {
  for (let i = tail.length - 2; i >= 0; i--)
    if (tail[i] === 0xff && tail[i + 1] === 0xd9) return true;
  return false;
}

function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * Walks a JPEG's marker segments to the first start-of-frame (SOF0-SOF15 except DHT, JPG, DAC) as
 * the bytes arrive, skipping segments (EXIF, ICC profiles: up to 64 KiB each) without keeping them.
 */
class JpegFrameReader {
  size: { width: number; height: number } | null = null;
  /** The structure is broken, or a scan starts before any frame header. */
  failed = false;
  /** Absolute offset of the marker being read (after SOI). */
  private at = 2;
  /** Its first bytes: 0xFF, the marker, the segment length, and for a frame the size. */
  private header: number[] = [];

  feed(chunk: Uint8Array, chunkStart: number): void {
    const chunkEnd = chunkStart + chunk.length;
    const need = (n: number): boolean => {
      while (this.header.length < n) {
        const offset = this.at + this.header.length;
        if (offset >= chunkEnd) return false;
        this.header.push(chunk[offset - chunkStart]!);
      }
      return true;
    };
    while (!this.size && !this.failed && this.at < chunkEnd) {
      if (!need(2)) return;
      const [prefix, marker] = this.header as [number, number];
      if (prefix !== 0xff) {
        this.fail();
        return;
      }
      if (marker === 0xff) {
        this.at += 1; // fill byte
        this.header = [0xff];
        continue;
      }
      if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
        this.at += 2; // markers without a length
        this.header = [];
        continue;
      }
      if (marker === 0xda) {
        this.fail(); // start of scan before any frame header
        return;
      }
      if (!need(4)) return;
      const length = (this.header[2]! << 8) | this.header[3]!;
      if (length < 2) {
        this.fail();
        return;
      }
      if (
        marker >= 0xc0 &&
        marker <= 0xcf &&
        marker !== 0xc4 &&
        marker !== 0xc8 &&
        marker !== 0xcc
      ) {
        if (!need(9)) return;
        const height = (this.header[5]! << 8) | this.header[6]!;
        const width = (this.header[7]! << 8) | this.header[8]!;
        if (width === 0 || height === 0) {
          this.fail();
          return;
        }
        this.size = { width, height };
        return;
      }
      this.at += 2 + length;
      this.header = [];
    }
  }

  private fail(): void {
    this.failed = true;
  }
}
