// Edits and deletions of a message after its turn was journalled (Discord's MESSAGE_UPDATE and
// MESSAGE_DELETE). A turn still waiting to run takes the new text, or is dropped with nothing
// sent. Once it ran, the stored message follows instead: edited text (no second answer), or the
// message deleted from memory, as the person deleted it. A turn waiting to retry after a model
// failure does both: it ran once, so its message is stored, and it has not answered yet.
import { editStoredMessage } from "../../db/memory/message-amendments.ts";
import { deleteMemories } from "../../db/memory/memory-repo.ts";
import type { Db } from "../../db/db.ts";
import { inboundMessageId } from "../../runtime/turn/message-ids.ts";
import type { AmendmentResult, MessageAmendment } from "./room-types.ts";
import type { TurnJournal } from "./turn-journal.ts";

export interface AmendmentDeps {
  journal: TurnJournal;
  db: Db;
  /** The room's cached history no longer matches D1. */
  forgetHistory(): Promise<void>;
}

const DROPPED = {
  code: "not_found" as const,
  status: 410,
  message: "the message was deleted before it was answered",
};

export async function amendMessage(
  deps: AmendmentDeps,
  amendment: MessageAmendment,
): Promise<AmendmentResult> {
  const { journal } = deps;
  const entry = journal.byKey(amendment.idempotencyKey);
  if (!entry) return "unknown";
  const { change, at } = amendment;
  // Synchronous checks and writes: the turn cannot start in between.
  const waiting =
    change.kind === "edit"
      ? journal.reviseText(entry.turnId, change.text, at)
      : journal.markDropped(entry.turnId, DROPPED, at);
  const result = change.kind === "edit" ? "revised" : "dropped";
  // Stored only once the turn ran (a retry after a model failure waits with it stored).
  if (waiting && entry.retries === 0) return result;
  const { agentId } = entry.input;
  const id = inboundMessageId(entry.turnId);
  if (change.kind === "edit") {
    const edited = await editStoredMessage(deps.db, {
      agentId,
      id,
      text: change.text,
      editedAt: at,
    });
    if (edited) await deps.forgetHistory();
    return waiting ? result : "edited";
  }
  const { deleted } = await deleteMemories(deps.db, { agentId, ids: [id] });
  if (deleted > 0) await deps.forgetHistory();
  return waiting ? result : "deleted";
}
