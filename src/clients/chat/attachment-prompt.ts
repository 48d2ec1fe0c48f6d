// What the model reads of a message's attachments, on every chat platform: text files as quoted
// data (never instructions), images alongside the message, and a note for each file that was not
// read saying why, which the model can relay. Each platform's ingest decides what was read.
import { ATTACHMENT_PREAMBLE, quoteData } from "../../runtime/context/quoted-data.ts";

/** One attachment as the ingest left it: read as text or an image, or refused with words. */
export type ReadAttachment =
  | { ok: true; title: string; kind: "text"; text: string }
  | { ok: true; title: string; kind: "image"; dataUrl: string }
  | { ok: false; title: string; reason: string };

/** Text files and refusals appended to the message, images alongside it. */
export function attachmentPrompt(results: readonly ReadAttachment[]): {
  text: string;
  images: string[];
} {
  const notes: string[] = [];
  const files: { source: string; text: string }[] = [];
  const images: string[] = [];
  for (const result of results) {
    if (!result.ok)
      notes.push(`(The attachment "${result.title}" was not read: ${result.reason}.)`);
    else if (result.kind === "text")
      files.push({ source: `file ${result.title}`, text: result.text });
    else {
      notes.push(`(Image attached: "${result.title}".)`);
      images.push(result.dataUrl);
    }
  }
  if (files.length > 0) notes.push(quoteData("Attached files", files, ATTACHMENT_PREAMBLE));
  return { text: notes.join("\n\n"), images };
}
