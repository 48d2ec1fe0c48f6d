// What a Telegram message carries besides text, as the room's attachments. A Telegram download URL
// holds the bot token (`/file/bot<token>/<path>`), so what is stored is a reference without it:
// `telegram-file:<file_id>` for a photo or document, `telegram-voice:<file_id>` for a voice note
// or audio file, which the room transcribes. The file_id stays valid for this bot; the ingest
// (telegram-files.ts) turns it into bytes through getFile when the turn runs.
import type { Attachment } from "../../runtime/ports/memory.ts";
import type { TelegramMessage } from "./update.ts";

export const TELEGRAM_FILE_REF = "telegram-file:";
export const TELEGRAM_VOICE_REF = "telegram-voice:";

/** Whether an attachment's reference is Telegram's. */
export function isTelegramAttachment(attachment: Attachment): boolean {
  return (
    attachment.url.startsWith(TELEGRAM_FILE_REF) || attachment.url.startsWith(TELEGRAM_VOICE_REF)
  );
}

/** The file id of a Telegram reference, or null when it is not one of that kind. */
export function telegramFileId(attachment: Attachment, ref: string): string | null {
  if (!attachment.url.startsWith(ref)) return null;
  const id = attachment.url.slice(ref.length);
  return id === "" ? null : id;
}

/**
 * The photo (its largest size only: Telegram sends every size it made), the document, the voice
 * note or the audio file of a message. Names and types are the sender's claims, kept as hints:
 * the ingest checks the bytes.
 */
export function messageAttachments(message: TelegramMessage): Attachment[] {
  const attachments: Attachment[] = [];
  const photo = largestPhoto(message);
  if (photo)
    attachments.push({
      url: `${TELEGRAM_FILE_REF}${photo.file_id}`,
      contentType: "image/jpeg",
      title: `photo-${String(message.message_id)}.jpg`,
    });
  if (message.document)
    attachments.push({
      url: `${TELEGRAM_FILE_REF}${message.document.file_id}`,
      ...(message.document.mime_type ? { contentType: message.document.mime_type } : {}),
      title: message.document.file_name ?? `document-${String(message.message_id)}`,
    });
  const voice = message.voice ?? message.audio;
  if (voice)
    attachments.push({
      url: `${TELEGRAM_VOICE_REF}${voice.file_id}`,
      contentType: voice.mime_type ?? "audio/ogg",
      title:
        message.audio?.file_name ??
        (message.voice ? `voice-${String(message.message_id)}.ogg` : "audio"),
    });
  return attachments;
}

/** Whether the message is a voice note (or audio file) the room will transcribe. */
export function hasVoice(message: TelegramMessage): boolean {
  return message.voice !== undefined || message.audio !== undefined;
}

function largestPhoto(message: TelegramMessage) {
  const sizes = message.photo ?? [];
  let best: (typeof sizes)[number] | undefined;
  for (const size of sizes)
    if (!best || size.width * size.height > best.width * best.height) best = size;
  return best;
}
