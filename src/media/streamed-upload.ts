// One uploaded file, from the request stream to R2: each chunk is checked (MediaCheckStream) and
// written (StreamedMediaWrite, which hashes with workerd's crypto.DigestStream) as it arrives,
// so a file is never in memory whole. The verdicts that need the whole file (empty, truncated)
// come at its end; a refusal at any point aborts the write, leaving nothing in R2.
import type { PostItem } from "../db/stores/post-store.ts";
import { ValidationError } from "../runtime/util/errors.ts";
import { StreamedMediaWrite } from "./store.ts";
import { MediaCheckStream } from "./validate.ts";

/** A stored file, described exactly as a post lists its items. */
export type ReceivedMedia = PostItem;

export interface ReceiveMediaOptions {
  bucket: R2Bucket;
  /** The file's next bytes, null at its end (MultipartReader.readChunk). */
  read: () => Promise<Uint8Array | null>;
  /** Where it goes in R2, given the extension its content shows ("jpg" or "mp4"). */
  keyFor: (extension: "jpg" | "mp4") => string;
  /** How error messages name it: "file 2 (beach.jpg)". */
  name: string;
  metadata?: Record<string, string>;
  /** An upper bound of the file's size, when known (the request's Content-Length): sizes the buffer. */
  sizeHint?: number;
}

/** Stores a file Instagram accepts, or throws ValidationError with the reason and stores nothing. */
export async function receiveMedia(options: ReceiveMediaOptions): Promise<ReceivedMedia> {
  const check = new MediaCheckStream(options.name);
  let write = null as StreamedMediaWrite | null; // set by flush, once the kind is known
  // The first bytes wait until they show what the file is (its key's extension depends on it).
  const pending: Uint8Array[] = [];
  const flush = async (
    kind: NonNullable<MediaCheckStream["kind"]>,
  ): Promise<StreamedMediaWrite> => {
    write ??= new StreamedMediaWrite(
      options.bucket,
      options.keyFor(kind.kind === "image" ? "jpg" : "mp4"),
      options.metadata,
      options.sizeHint,
    );
    for (const chunk of pending.splice(0)) await write.write(chunk, kind.contentType);
    return write;
  };
  try {
    for (let chunk = await options.read(); chunk; chunk = await options.read()) {
      const problem = check.push(chunk);
      if (problem) throw new ValidationError(problem);
      pending.push(chunk);
      const kind = check.kind;
      if (kind) await flush(kind);
    }
    const verdict = check.finish();
    if (!verdict.ok) throw new ValidationError(verdict.reason);
    const target = await flush(verdict);
    const sha256 = await target.finish(verdict.contentType);
    return {
      key: target.key,
      kind: verdict.kind,
      contentType: verdict.contentType,
      bytes: check.bytes,
      sha256,
      ...(verdict.kind === "image" ? { width: verdict.width, height: verdict.height } : {}),
    };
  } catch (error) {
    await write?.abort().catch(() => undefined);
    throw error;
  }
}
