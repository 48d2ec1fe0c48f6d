// A Telegram message's files for the room, read when its turn runs: getFile, then the download
// through the Bot API's own base (configuration, with the token in the path: the URL is never
// stored, logged or shown), checked by content and capped in size while reading, copied into R2
// under the turn's prefix (a re-run finds the copy and downloads nothing twice). Photos and text
// documents go to the model as Discord's attachments do; a voice note goes to the transcriber.
import { loadConfig } from "../../config.ts";
import type { Env } from "../../env.ts";
import { dataUrl } from "../../media/data-url.ts";
import { safeFileName, sniffAudioType, sniffChatFile } from "../../media/sniff.ts";
import { storeMedia } from "../../media/store.ts";
import {
  createTranscriber,
  TranscriptionError,
  type Transcriber,
} from "../../model/transcriber.ts";
import type { AttachmentIngest, VoiceTranscript } from "../../objects/shared/reply-surface.ts";
import { attachmentPrompt, type ReadAttachment } from "../chat/attachment-prompt.ts";
import { STORED_MEDIA_PREFIX } from "../chat/attachment-router.ts";
import { TELEGRAM_MAX_DOWNLOAD_BYTES, TelegramApiError, type TelegramBotApi } from "./bot-api.ts";
import { TELEGRAM_FILE_REF, TELEGRAM_VOICE_REF, telegramFileId } from "./message-files.ts";
import { telegramBotApi } from "./telegram-surface.ts";

export const MAX_TELEGRAM_FILES = 4;
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
export const MAX_TEXT_BYTES = 256 * 1024;
/** Images go to the model inline (base64); larger ones need a public URL we do not serve yet. */
export const MAX_INLINE_IMAGE_BYTES = 4 * 1024 * 1024;
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
      const results: ReadAttachment[] = [];
      let count = 0;
      for (const [index, attachment] of attachments.entries()) {
        const fileId = telegramFileId(attachment, TELEGRAM_FILE_REF);
        if (!fileId) continue; // A voice note is the transcriber's.
        const title = safeFileName(attachment.title ?? `file-${index + 1}`);
        count += 1;
        try {
          if (count > MAX_TELEGRAM_FILES)
            throw new FileRefused(`only ${MAX_TELEGRAM_FILES} files are read per message`);
          const key = `${keyPrefix}/tg-${index}-${title}`;
          const { bytes, stored } = await bytesOf(fileId, key, MAX_IMAGE_BYTES);
          const kind = sniffChatFile(bytes, title, attachment.contentType);
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
          results.push(
            kind.kind === "text"
              ? { ok: true, title, kind: "text", text: new TextDecoder().decode(bytes) }
              : { ok: true, title, kind: "image", dataUrl: dataUrl(kind.contentType, bytes) },
          );
        } catch (error) {
          const reason = error instanceof FileRefused ? error.message : "it could not be read";
          results.push({ ok: false, title, reason });
        }
      }
      return attachmentPrompt(results);
    },

    async transcribe(attachments, keyPrefix): Promise<VoiceTranscript | null> {
      const index = attachments.findIndex((a) => a.url.startsWith(TELEGRAM_VOICE_REF));
      const voice = attachments[index];
      const fileId = voice ? telegramFileId(voice, TELEGRAM_VOICE_REF) : null;
      if (!voice || !fileId) return null;
      const title = safeFileName(voice.title ?? "voice.ogg");
      const key = `${keyPrefix}/tg-voice-${index}-${title}`;
      let audio: { bytes: Uint8Array; contentType: string };
      let kept = attachments;
      try {
        const { bytes, stored } = await bytesOf(fileId, key, TELEGRAM_MAX_DOWNLOAD_BYTES);
        const contentType = sniffAudioType(bytes);
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
