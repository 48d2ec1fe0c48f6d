// A voice note becomes the turn's text before the runtime sees the message: its respond rules,
// the query embedding, the stored memory and the prompt all read the transcript, quoted as the
// person's words. The rewritten message is journalled before anything else happens, so a re-run
// neither downloads nor transcribes again. A failed transcription keeps the message (with its
// audio's reference) and fails the turn with words for the person, and no model call is made.
// A member over their place's budget gets no transcription: the turn then gives the notice.
import { flatten } from "../../runtime/context/quoted-data.ts";
import { AppError } from "../../runtime/util/errors.ts";
import type { TurnInput } from "../../runtime/turn/turn-types.ts";
import { filterVerdict } from "../../runtime/access/message-filter.ts";
import type { PlacePolicy } from "../../runtime/access/place-policy.ts";
import type { AttachmentIngest } from "../shared/reply-surface.ts";
import type { JournalEntry } from "./journal-rows.ts";
import type { TurnJournal } from "./turn-journal.ts";

/** What `details.kind` says on the error of a turn whose voice note could not be transcribed. */
export const VOICE_NOTE_FAILED = "voice_note_not_transcribed";

/** The turn's voice note was not transcribed: the message is kept, nothing is answered. */
export class VoiceNoteError extends AppError {
  constructor(reason: string) {
    super(
      "upstream",
      502,
      `I couldn't transcribe your voice note: ${flatten(reason, 200)}. It is kept; please try again, or type your message.`,
      { kind: VOICE_NOTE_FAILED },
    );
  }
}

/**
 * The turn's entry with its voice note transcribed (or the entry unchanged when it has none left
 * to transcribe), journalled; `failure` when it could not be.
 */
export async function transcribeVoiceNote(
  entry: JournalEntry,
  ingest: AttachmentIngest,
  journal: TurnJournal,
  /** The place's budget is used: nothing is transcribed (read only when there is audio to send). */
  overBudget: () => Promise<boolean>,
): Promise<{ entry: JournalEntry; failure: VoiceNoteError | null }> {
  const { attachments, agentId } = entry.input;
  if (!ingest.transcribe || attachments.length === 0) return { entry, failure: null };
  if (await overBudget()) return { entry, failure: null };
  const result = await ingest.transcribe(attachments, `attachments/${agentId}/${entry.turnId}`);
  if (!result) return { entry, failure: null };
  const input: TurnInput = {
    ...entry.input,
    text: result.ok
      ? voiceNoteText(result.transcript, entry.input.text)
      : voiceNoteText(null, entry.input.text),
    attachments: result.attachments,
    ...admittedPlace(entry.input, result.ok ? result.transcript : null),
  };
  journal.reviseInput(entry.turnId, input, Date.now());
  return {
    entry: { ...entry, input },
    failure: result.ok ? null : new VoiceNoteError(result.reason),
  };
}

/**
 * The second admission of a voice note (src/clients/chat/admission.ts): its words go through the
 * place's filter, which the webhook could not read them for, before the model or memory does. A
 * declined transcript makes the turn one the rules decline (stored, never answered); the rules
 * themselves are not kept past this point.
 */
function admittedPlace(input: TurnInput, transcript: string | null): { place?: PlacePolicy } {
  const place = input.place;
  if (!place?.filter) return {};
  const { filter, ...rest } = place;
  const filtered =
    transcript === null
      ? null
      : filterVerdict(filter, { text: transcript, accountCreatedAt: null, now: Date.now() });
  const admitted: PlacePolicy = { ...rest, ...(filtered ? { filtered } : {}) };
  return { place: admitted };
}

/**
 * `[voice note, transcribed] «…»`, then what the person typed with it (a caption). The
 * transcript is the person's own words, so it is the message, not quoted data; the guillemets
 * only mark where the speech starts and ends.
 */
export function voiceNoteText(transcript: string | null, typed: string): string {
  const head =
    transcript === null
      ? "[voice note, not transcribed]"
      : `[voice note, transcribed] «${transcript.replace(/»/g, "”")}»`;
  return typed.trim() === "" ? head : `${head}\n${typed}`;
}
