// Receive: the inbound message, stored before anything that can fail. Its id is derived from the
// turn, so storing it again after an eviction writes nothing twice.
import type { Memory } from "../../ports/memory.ts";
import { inboundMessageId } from "../message-ids.ts";
import type { TurnRunnerDeps } from "../turn-deps.ts";
import type { TurnInput } from "../turn-types.ts";

export async function receiveMessage(deps: TurnRunnerDeps, input: TurnInput): Promise<void> {
  const memory: Memory = {
    id: inboundMessageId(input.turnId),
    type: "message",
    agentId: input.agentId,
    roomId: input.roomId,
    userId: input.userId,
    content: {
      text: input.text,
      role: "user",
      source: input.source,
      ...(input.userName ? { userName: input.userName } : {}),
      ...(input.attachments.length > 0 ? { attachments: input.attachments } : {}),
    },
    metadata: {
      turnId: input.turnId,
      tokens: deps.tokens.count(input.text),
      receivedAt: input.receivedAt,
      // Kept, but out of later prompts: the filter declined it before any model.
      ...(input.place?.filtered ? { filtered: input.place.filtered } : {}),
    },
    // Stored at processing time from the room's monotonic clock, so a room's messages sort in
    // the order turns actually ran, with no two sharing a timestamp.
    createdAt: deps.clock.now(),
  };
  await deps.memory.saveInbound({ memory, userName: input.userName, source: input.source });
}
