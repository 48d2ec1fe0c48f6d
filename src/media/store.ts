// Puts checked bytes into R2 the one way every upload path does: with their content type and
// SHA-256 (hex) in the object's metadata, so a copy can be verified and a re-upload recognised.
// Uploads stream in through StreamedMediaWrite, which never holds more than one R2 part in memory
// and hashes with workerd's crypto.DigestStream.
import { sha256Hex, toHex } from "../runtime/util/hashing.ts";

/** `sha256` when the caller already hashed the bytes (it is not computed twice). */
export async function storeMedia(
  bucket: R2Bucket,
  key: string,
  bytes: Uint8Array,
  contentType: string,
  metadata: Record<string, string> = {},
  knownSha256?: string,
): Promise<string> {
  const sha256 = knownSha256 ?? (await sha256OfBytes(bytes));
  await bucket.put(key, bytes, {
    httpMetadata: { contentType },
    customMetadata: { ...metadata, sha256 },
  });
  return sha256;
}

export async function sha256OfBytes(bytes: Uint8Array): Promise<string> {
  return sha256Hex(bytes);
}

/**
 * R2's smallest multipart part (all parts but the last), and the size of every part we upload:
 * R2 also wants the parts of one upload equal in size except the last, which may be smaller.
 */
export const R2_PART_BYTES = 5 * 1024 * 1024;
const FIRST_BUFFER_BYTES = 256 * 1024;

/**
 * Writes a file of unknown length to R2 as it streams in, and hashes it (SHA-256) on the way. `bucket.put` wants the length up front
 * (a multipart part has none), so bytes are gathered into one part of R2_PART_BYTES: a file that
 * ends before filling it goes up with one `put` (with its SHA-256 in the metadata, as storeMedia
 * does); a larger one becomes a multipart upload, one part at a time. R2 takes a multipart
 * upload's metadata when it starts, before the hash is known, so such objects carry the content
 * type but not the hash (callers keep it: the post record in D1 does). `abort` leaves nothing.
 */
export class StreamedMediaWrite {
  private buffer = new Uint8Array(0);
  private filled = 0;
  private upload: R2MultipartUpload | null = null;
  private readonly parts: R2UploadedPart[] = [];
  private readonly bucket: R2Bucket;
  readonly key: string;
  private readonly metadata: Record<string, string>;

  private readonly sizeHint: number;
  /** SHA-256 of everything written, with workerd's DigestStream (no copy of the bytes kept). */
  private readonly hashing = new crypto.DigestStream("SHA-256");
  private readonly hash = this.hashing.getWriter();

  /** `sizeHint`: an upper bound of the file's size when one is known (the request's length). */
  constructor(
    bucket: R2Bucket,
    key: string,
    metadata: Record<string, string> = {},
    sizeHint?: number,
  ) {
    // Aborting the hash (a refused file) rejects `digest`; that is expected, not unhandled.
    this.hashing.digest.catch(() => undefined);
    this.bucket = bucket;
    this.key = key;
    this.metadata = metadata;
    this.sizeHint = sizeHint && sizeHint > 0 ? sizeHint : FIRST_BUFFER_BYTES;
  }

  /** Takes the next bytes; `contentType` is needed only once a part goes to R2. */
  async write(chunk: Uint8Array, contentType: string): Promise<void> {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.filled === this.buffer.length) this.grow();
      const take = Math.min(chunk.length - offset, this.buffer.length - this.filled);
      this.buffer.set(chunk.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === R2_PART_BYTES) await this.flushPart(contentType);
    }
  }

  /** Stores what was written, after the caller's checks passed; returns its SHA-256 (hex). */
  async finish(contentType: string): Promise<string> {
    let sha256: string;
    if (!this.upload) {
      const bytes = this.buffer.subarray(0, this.filled);
      await this.hash.write(bytes);
      sha256 = await this.digest();
      await this.bucket.put(this.key, bytes, {
        httpMetadata: { contentType },
        customMetadata: { ...this.metadata, sha256 },
      });
    } else {
      if (this.filled > 0) await this.flushPart(contentType);
      sha256 = await this.digest();
      await this.upload.complete(this.parts);
    }
    this.buffer = new Uint8Array(0);
    return sha256;
  }

  /** Drops the parts uploaded so far (nothing was stored as an object yet). */
  async abort(): Promise<void> {
    this.buffer = new Uint8Array(0);
    await this.hash.abort().catch(() => undefined);
    const upload = this.upload;
    this.upload = null;
    if (upload) await upload.abort();
  }

  private async digest(): Promise<string> {
    await this.hash.close();
    return toHex(new Uint8Array(await this.hashing.digest));
  }

  private grow(): void {
    // Small files stay small in memory; once a multipart upload runs, every part is a full one.
    const first = this.buffer.length === 0 ? this.sizeHint : this.buffer.length * 2;
    const size = this.upload
      ? R2_PART_BYTES
      : Math.min(R2_PART_BYTES, Math.max(first, this.buffer.length + 1));
    const grown = new Uint8Array(size);
    grown.set(this.buffer.subarray(0, this.filled));
    this.buffer = grown;
  }

  private async flushPart(contentType: string): Promise<void> {
    this.upload ??= await this.bucket.createMultipartUpload(this.key, {
      httpMetadata: { contentType },
      customMetadata: this.metadata,
    });
    const part = this.buffer.subarray(0, this.filled);
    // A fresh buffer for the next part: R2 may still hold on to this one's memory.
    this.buffer = new Uint8Array(0);
    this.filled = 0;
    // Hashed a part at a time (a few calls per file, not one per network chunk), in order.
    const [uploaded] = await Promise.all([
      this.upload.uploadPart(this.parts.length + 1, part),
      this.hash.write(part),
    ]);
    this.parts.push(uploaded);
  }
}
