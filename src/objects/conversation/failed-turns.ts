// The failed turns behind a page of the room's history. A failed turn stores no reply in D1, only
// the person's message; the journal keeps why it failed for IDEMPOTENCY_WINDOW_MS, so the history
// can show the failure where the reply would be, as the stream's `error` event did.
import type { Memory } from "../../runtime/ports/memory.ts";
import { turnIdOfInbound } from "../../runtime/turn/message-ids.ts";
import type { FailedTurn } from "./room-types.ts";
import type { TurnJournal } from "./turn-journal.ts";

export function failedTurnsOf(
  journal: Pick<TurnJournal, "failedAmong">,
  messages: Memory[],
): FailedTurn[] {
  const messageOf = new Map<string, string>();
  for (const message of messages) {
    const turnId = message.content.role === "agent" ? null : turnIdOfInbound(message.id);
    if (turnId) messageOf.set(turnId, message.id);
  }
  return journal.failedAmong([...messageOf.keys()]).flatMap((entry) => {
    const messageId = messageOf.get(entry.turnId);
    if (!messageId || !entry.error) return [];
    const { code, message } = entry.error;
    return [
      { turnId: entry.turnId, messageId, error: { code, message }, failedAt: entry.updatedAt },
    ];
  });
}
