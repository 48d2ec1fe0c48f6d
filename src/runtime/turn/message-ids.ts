// The ids of the two messages a turn stores: the person's message (`<turn id>:in`) and the agent's
// reply (`<turn id>:out`). Derived from the turn, so a replayed turn writes the same rows and a
// reply can be found from its message. The one home of the scheme: the turn runner writes by it,
// the history provider leaves the current message out by it, a room's history finds the turns
// behind its messages by it, and SQL that pairs the two
// (src/db/memory/message-amendments.ts) is written from these constants.
export const INBOUND_SUFFIX = ":in";
export const REPLY_SUFFIX = ":out";

export function inboundMessageId(turnId: string): string {
  return `${turnId}${INBOUND_SUFFIX}`;
}

export function replyMessageId(turnId: string): string {
  return `${turnId}${REPLY_SUFFIX}`;
}

/** The turn a person's stored message started, or null for a message no turn wrote (imported). */
export function turnIdOfInbound(messageId: string): string | null {
  return messageId.endsWith(INBOUND_SUFFIX) ? messageId.slice(0, -INBOUND_SUFFIX.length) : null;
}
