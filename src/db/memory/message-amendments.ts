// Changes to stored messages that come from the chat platform after the fact: a person edited a
// message (its stored text follows, marked `editedAt`, and its vector is redone), and a room keeps
// only its newest unanswered messages (channel chatter the agent stored for context but did not
// answer) so a busy channel cannot grow without bound. Deleted messages go through deleteMemories.
import { sql } from "drizzle-orm";
import type { Db } from "../db.ts";
import { INBOUND_SUFFIX, REPLY_SUFFIX } from "../../runtime/turn/message-ids.ts";

// The message-id scheme as SQL text (literals, not bound values, so the statement is the same
// one every time and the planner sees the LIKE pattern).
const INBOUND_LIKE = sql.raw(`'%${INBOUND_SUFFIX}'`);
const INBOUND_LENGTH = sql.raw(String(INBOUND_SUFFIX.length));
const REPLY_LITERAL = sql.raw(`'${REPLY_SUFFIX}'`);

/** Updates a stored message's text; false when the agent holds no such message. */
export async function editStoredMessage(
  db: Db,
  edit: { agentId: string; id: string; text: string; editedAt: number },
): Promise<boolean> {
  const result = await db.run(sql`
    UPDATE memories
       SET content = json_set(content, '$.text', ${edit.text}),
           metadata = json_set(metadata, '$.editedAt', ${edit.editedAt}),
           embedded_at = NULL
     WHERE agent_id = ${edit.agentId} AND id = ${edit.id} AND type = 'message'`);
  return result.meta.changes > 0;
}

/**
 * Deletes a room's unanswered inbound messages beyond the newest `keep` (a message is unanswered
 * when its turn stored no reply: src/runtime/turn/message-ids.ts pairs the two ids). Returns how
 * many went.
 */
export async function pruneUnansweredMessages(
  db: Db,
  room: { agentId: string; roomId: string; keep: number },
): Promise<number> {
  const { agentId, roomId, keep } = room;
  const unanswered = sql`
    m.agent_id = ${agentId} AND m.room_id = ${roomId} AND m.type = 'message'
    AND m.id LIKE ${INBOUND_LIKE} AND json_extract(m.content, '$.role') = 'user'
    AND NOT EXISTS (
      SELECT 1 FROM memories r
       WHERE r.agent_id = m.agent_id
         AND r.id = substr(m.id, 1, length(m.id) - ${INBOUND_LENGTH}) || ${REPLY_LITERAL})`;
  const result = await db.run(sql`
    DELETE FROM memories WHERE seq IN (
      SELECT m.seq FROM memories m WHERE ${unanswered}
       ORDER BY m.seq DESC LIMIT -1 OFFSET ${keep})`);
  return result.meta.changes;
}
