// A Telegram message's files for the room, read when its turn runs: getFile, then the download
// through the Bot API's own base (configuration, with the token in the path: the URL is never
// stored, logged or shown), checked by content and capped in size while reading, copied into R2
// under the turn's prefix (a re-run finds the copy and downloads nothing twice). Photos and text
// documents go to the model as Discord's attachments do; a voice note goes to the transcriber.
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { dataUrl } from "../../media/data-url.ts";
import { sniffType } from "../../media/sniff.ts";
import { storeMedia } from "../../media/store.ts";
import {
  createTranscriber,
  TranscriptionError,
  type Transcriber,
} from "../../model/transcriber.ts";
import type { AttachmentIngest, VoiceTranscript } from "../../objects/shared/reply-surface.ts";
import { ATTACHMENT_PREAMBLE, quoteData } from "../../runtime/context/quoted-data.ts";
import { STORED_MEDIA_PREFIX } from "../chat/attachment-router.ts";
import { TELEGRAM_MAX_DOWNLOAD_BYTES, TelegramApiError, type TelegramBotApi } from "./bot-api.ts";
import { TELEGRAM_FILE_REF, TELEGRAM_VOICE_REF, telegramFileId } from "./message-files.ts";
import { telegramBotApi } from "./telegram-surface.ts";

export const MAX_TELEGRAM_FILES = 4;
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
export const MAX_TEXT_BYTES = 256 * 1024;
/** Images go to the model inline (base64); larger ones need a public URL we do not serve yet. */
export const MAX_INLINE_IMAGE_BYTES = 4 * 1024 * 1024;
const TEXT_EXTENSIONS = /\.(txt|md|markdown|csv|json|log|ya?ml|xml|html?|ts|js|py)$/i;
const MB = 1024 * 1024;

export interface TelegramFilesOptions {
  api: TelegramBotApi;
  bucket: R2Bucket;
  transcriber: Transcriber;
}

export function createTelegramAttachmentIngest(env: Env): AttachmentIngest {
  const config = loadConfig(env);
  return telegramFiles({
    api: telegramBotApi(env),
    bucket: env.MEDIA,
    transcriber: createTranscriber({
      backend: config.model,
      model: config.transcriptionModel,
      // Late-bound so tests (and anything else) that replace globalThis.fetch are honoured.
      fetch: (input, init) => fetch(input, init),
    }),
  });
}

/** Words for the person or the model; never Telegram's answer or a URL. */
class FileRefused extends Error {}

export function telegramFiles(options: TelegramFilesOptions): AttachmentIngest {
  const { api, bucket } = options;

  /** The file's bytes: R2's copy if this turn made one, else Telegram's, at most `maxBytes`. */
  const bytesOf = async (fileId: string, key: string, maxBytes: number) => {
    const stored = await bucket.get(key);
    if (stored) return { bytes: new Uint8Array(await stored.arrayBuffer()), stored: true };
    const tooLarge = new FileRefused(`it is larger than ${maxBytes / MB} MB`);
    try {
      const file = await api.getFile(fileId);
      if ((file.file_size ?? 0) > maxBytes) throw tooLarge;
      // getFile gives no path for a file over the Bot API's 20 MB download limit.
      if (!file.file_path)
        throw new FileRefused(
          `it is larger than ${TELEGRAM_MAX_DOWNLOAD_BYTES / MB} MB, the most Telegram lets bots download`,
        );
      const downloaded = await api.downloadFile(file.file_path, maxBytes);
      return { bytes: downloaded.bytes, stored: false };
    } catch (error) {
      if (error instanceof FileRefused) throw error;
      if (error instanceof TelegramApiError && error.reason === "too_large") throw tooLarge;
      // Telegram refuses getFile (400) for a file bots may not download, over 20 MB.
      if (error instanceof TelegramApiError && error.method === "getFile" && !error.retryable)
        throw new FileRefused(
          `Telegram did not hand it to the bot (bots may download files of at most ${TELEGRAM_MAX_DOWNLOAD_BYTES / MB} MB)`,
        );
      throw new FileRefused("it could not be downloaded from Telegram");
    }
  };

  return {
    async read(attachments, keyPrefix) {
      const notes: string[] = [];
      const files: { source: string; text: string }[] = [];
      const images: string[] = [];
      let count = 0;
      for (const [index, attachment] of attachments.entries()) {
        const fileId = telegramFileId(attachment, TELEGRAM_FILE_REF);
        if (!fileId) continue; // A voice note is the transcriber's.
        const title = safeName(attachment.title ?? `file-${index + 1}`);
        count += 1;
        try {
          if (count > MAX_TELEGRAM_FILES)
            throw new FileRefused(`only ${MAX_TELEGRAM_FILES} files are read per message`);
          const key = `${keyPrefix}/tg-${index}-${title}`;
          const { bytes, stored } = await bytesOf(fileId, key, MAX_IMAGE_BYTES);
          const kind = classify(bytes, title, attachment.contentType);
          if (!kind)
            throw new FileRefused(
              "only JPEG, PNG, GIF and WebP images and UTF-8 text files are accepted",
            );
          const limit = kind.kind === "image" ? MAX_IMAGE_BYTES : MAX_TEXT_BYTES;
          if (bytes.byteLength > limit)
            throw new FileRefused(
              `it is larger than ${limit >= MB ? `${limit / MB} MB` : `${limit / 1024} KB`}`,
            );
          if (kind.kind === "image" && bytes.byteLength > MAX_INLINE_IMAGE_BYTES)
            throw new FileRefused(
              `images over ${MAX_INLINE_IMAGE_BYTES / MB} MB cannot be shown to the model yet`,
            );
          if (!stored)
            await storeMedia(bucket, key, bytes, kind.contentType, {
              filename: title,
              source: "telegram",
            });
          if (kind.kind === "text")
            files.push({ source: `file ${title}`, text: new TextDecoder().decode(bytes) });
          else {
            notes.push(`(Image attached: "${title}".)`);
            images.push(dataUrl(kind.contentType, bytes));
          }
        } catch (error) {
          const reason = error instanceof FileRefused ? error.message : "it could not be read";
          notes.push(`(The attachment "${title}" was not read: ${reason}.)`);
        }
      }
      if (files.length > 0) notes.push(quoteData("Attached files", files, ATTACHMENT_PREAMBLE));
      return { text: notes.join("\n\n"), images };
    },

    async transcribe(attachments, keyPrefix): Promise<VoiceTranscript | null> {
      const index = attachments.findIndex((a) => a.url.startsWith(TELEGRAM_VOICE_REF));
      const voice = attachments[index];
      const fileId = voice ? telegramFileId(voice, TELEGRAM_VOICE_REF) : null;
      if (!voice || !fileId) return null;
      const title = safeName(voice.title ?? "voice.ogg");
      const key = `${keyPrefix}/tg-voice-${index}-${title}`;
      let audio: { bytes: Uint8Array; contentType: string };
      let kept = attachments;
      try {
        const { bytes, stored } = await bytesOf(fileId, key, TELEGRAM_MAX_DOWNLOAD_BYTES);
        const contentType = audioType(bytes);
        if (!contentType) throw new FileRefused("it is not a recording in a format we can read");
        if (!stored)
          await storeMedia(bucket, key, bytes, contentType, {
            filename: title,
            source: "telegram",
          });
        audio = { bytes, contentType };
        // From here on the message keeps R2's copy, and nothing transcribes it a second time.
        kept = attachments.map((a, i) =>
          i === index ? { url: `${STORED_MEDIA_PREFIX}${key}`, contentType, title } : a,
        );
      } catch (error) {
        const reason = error instanceof FileRefused ? error.message : "it could not be stored";
        return { ok: false, reason, attachments };
      }
      try {
        const transcript = await options.transcriber.transcribe({
          bytes: audio.bytes,
          contentType: audio.contentType,
          filename: title,
        });
        return { ok: true, transcript, attachments: kept };
      } catch (error) {
        const reason =
          error instanceof TranscriptionError ? error.message : "the transcription failed";
        return { ok: false, reason, attachments: kept };
      }
    },
  };
}

/** The recording's format from its first bytes: what Telegram's voice notes and audio files are. */
export function audioType(bytes: Uint8Array): string | null {
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

/** An image by its bytes; text only when it decodes as UTF-8 without NULs. */
function classify(
  bytes: Uint8Array,
  name: string,
  declared?: string,
): { kind: "image" | "text"; contentType: string } | null {
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

function safeName(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9._-]+/g, "_")
    .replace(/^[._]+/, "")
    .slice(0, 100);
  return cleaned || "file";
}
