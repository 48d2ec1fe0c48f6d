// Reads the multipart body of POST /agents/:agentId/media as it streams in: text fields are
// checked as they arrive, and each `file` goes straight to R2 through receiveMedia (checked,
// hashed, never whole in memory). Fields may come before or after the files. On any refusal or
// failure everything this request wrote to R2 is removed before the error goes out.
import { MultipartReader, multipartBoundary } from "../../../media/multipart.ts";
import { receiveMedia, type ReceivedMedia } from "../../../media/streamed-upload.ts";
import { checkCaption, MAX_UPLOAD_BODY_BYTES } from "../../../media/validate.ts";
import { AppError, ValidationError } from "../../../runtime/util/errors.ts";
import { errorField, log } from "../../../log.ts";

export const MAX_POST_FILES = 10;
const MAX_ALT_TEXT_CHARS = 1_000;
/** A caption of 2,200 characters is at most 8,800 bytes of UTF-8; anything longer is refused. */
const MAX_FIELD_BYTES = 16 * 1024;
const FIELDS = new Set(["file", "caption", "altText", "publish", "generateCaption"]);
type TextField = "caption" | "altText" | "publish" | "generateCaption";

export interface ReceivedUpload {
  items: ReceivedMedia[];
  caption: string;
  altText: string | null;
  publish: boolean;
  generateCaption: boolean;
  /** Removes what was stored (when the post cannot be recorded after all). */
  discard(): Promise<void>;
}

export interface ReceiveUploadOptions {
  request: Request;
  bucket: R2Bucket;
  agentId: string;
  postId: string;
}

export async function receiveUpload({
  request,
  bucket,
  agentId,
  postId,
}: ReceiveUploadOptions): Promise<ReceivedUpload> {
  const boundary = multipartBoundary(request.headers.get("content-type"));
  if (!boundary || !request.body)
    throw new ValidationError(
      "the body must be multipart/form-data with one or more `file` fields",
    );
  const reader = new MultipartReader(request.body, boundary, {
    maxBodyBytes: MAX_UPLOAD_BODY_BYTES,
  });
  const items: ReceivedMedia[] = [];
  const fields = new Map<TextField, string>();
  const discard = () => bucket.delete(items.map((item) => item.key)).catch(() => undefined);
  try {
    for (let part = await reader.nextPart(); part; part = await reader.nextPart()) {
      if (!FIELDS.has(part.name))
        throw new ValidationError(
          `unknown fields: ${part.name} (expected file, caption, altText, publish, generateCaption)`,
        );
      if (part.name === "file") {
        if (part.filename === null)
          throw new ValidationError("send one to ten files in `file` fields");
        if (items.length === MAX_POST_FILES)
          throw new ValidationError(
            `a post has at most ${MAX_POST_FILES} files (a carousel); got at least ${MAX_POST_FILES + 1}`,
          );
        const number = items.length + 1;
        items.push(
          await receiveMedia({
            bucket,
            read: () => reader.readChunk(),
            keyFor: (extension) => `media/${agentId}/${postId}/${number}.${extension}`,
            name: `file ${number} (${part.filename || "unnamed"})`,
            metadata: { postId },
            sizeHint: Number(request.headers.get("content-length")) || undefined,
          }),
        );
        continue;
      }
      const name = part.name as TextField;
      if (part.filename !== null) throw new ValidationError(`\`${name}\` must be text, not a file`);
      if (fields.has(name)) throw new ValidationError(`send \`${name}\` once`);
      const value = await reader.readText(MAX_FIELD_BYTES, `\`${name}\``);
      fields.set(name, value);
      checkField(name, value); // as soon as it arrives: a bad caption before the files stores nothing
    }
    if (items.length === 0) throw new ValidationError("send one to ten files in `file` fields");
    const caption = fields.get("caption") ?? "";
    const altText = fields.get("altText") ?? null;
    const publish = (fields.get("publish") ?? "true") === "true";
    const generateCaption = (fields.get("generateCaption") ?? "false") === "true";
    if (generateCaption && !publish)
      throw new ValidationError("generateCaption applies to a post being published (publish=true)");
    if (altText !== null && items.length > 1)
      throw new ValidationError(
        `altText is for a single photo, at most ${MAX_ALT_TEXT_CHARS} characters`,
      );
    return { items, caption, altText, publish, generateCaption, discard };
  } catch (error) {
    await reader.cancel();
    await discard();
    if (error instanceof AppError) throw error;
    // R2 failed (or the client went away mid-body): nothing of this request was kept.
    log.error("media_store_failed", { agentId, postId, error: errorField(error) });
    throw new AppError("upstream", 503, "storing the upload failed; nothing was kept, try again");
  }
}

function checkField(name: TextField, value: string): void {
  if (name === "publish" || name === "generateCaption") {
    if (value !== "true" && value !== "false")
      throw new ValidationError(`${name} must be true or false`);
  } else if (name === "caption") {
    const problem = checkCaption(value);
    if (problem) throw new ValidationError(problem);
  } else if (value.length > MAX_ALT_TEXT_CHARS) {
    throw new ValidationError(
      `altText is for a single photo, at most ${MAX_ALT_TEXT_CHARS} characters`,
    );
  }
}
