// The parts of one room object, put together when it starts: its turn journal (migrated and
// pruned), the delivery of replies to the surface, the upkeep around turns, the turn queue and
// the edits of journalled messages, each handed what it needs and none reaching back into the
// object; then the work an earlier instance left is resumed. agent-room.ts answers RPC, schedules
// and queue items with them.
import type { Env } from "../../env.ts";
import type { RoomRuntime } from "../shared/agent-wiring.ts";
import type { RoomPlatform } from "../shared/reply-surface.ts";
import type { AfterReplyChain } from "./after-reply-chain.ts";
import { amendMessage } from "./journal-edits.ts";
import { RoomDelivery } from "./reply-delivery.ts";
import type { AmendmentResult, MessageAmendment } from "./room-types.ts";
import { RoomUpkeep, type RoomUpkeepOptions } from "./room-upkeep.ts";
import { TurnJournal } from "./turn-journal.ts";
import { TurnQueue } from "./turn-queue.ts";
import { turnServicesFor } from "./turn-services.ts";
import type { TurnWaiters } from "./turn-waiters.ts";

export interface RoomParts {
  journal: TurnJournal;
  delivery: RoomDelivery;
  upkeep: RoomUpkeep;
  turns: TurnQueue;
  /** The message behind a turn was edited or deleted on its platform (journal-edits.ts). */
  amend(amendment: MessageAmendment): Promise<AmendmentResult>;
}

/** What the object gives its parts: its storage and platform, and its durable scheduling. */
export interface RoomSource extends Pick<RoomUpkeepOptions, "queue" | "expireAt" | "wake"> {
  name: string;
  env: Env;
  sql: SqlStorage;
  platform: RoomPlatform;
  waiters: TurnWaiters;
  replies: AfterReplyChain;
  /** The room's runtime, built on first use; it waits on `replies`, never on the parts. */
  runtime(): Promise<RoomRuntime>;
  forgetHistory(): Promise<void>;
  expireApproval(payload: { turnId: string; approvalId: string }): Promise<void>;
}

export function buildRoomParts(source: RoomSource): RoomParts {
  const { surface, attachments } = source.platform;
  const journal = new TurnJournal(source.sql);
  journal.migrate();
  journal.prune(Date.now());
  const delivery = new RoomDelivery({
    surface,
    journal,
    room: source.name,
    agentName: async (agentId) =>
      (await (await source.runtime()).agents.get(agentId))?.character.name ?? agentId,
    expireApproval: (payload) => source.expireApproval(payload),
    // The room's runtime exists by then: the turn whose reply this is ran on it.
    delivered: (delivery) => {
      source
        .runtime()
        .then((runtime) => runtime.tracer?.delivered(delivery))
        .catch(() => undefined);
    },
  });
  const upkeep = new RoomUpkeep({
    room: source.name,
    delivery,
    db: async () => (await source.runtime()).memoryDb,
    embeddings: async () => (await source.runtime()).embeddings,
    forgetHistory: () => source.forgetHistory(),
    queue: source.queue,
    expireAt: source.expireAt,
    wake: source.wake,
  });
  const turns = new TurnQueue({
    room: source.name,
    journal,
    services: async () => turnServicesFor(await source.runtime()),
    attachments,
    surface,
    waiters: source.waiters,
    replies: source.replies,
    upkeep,
  });
  const amend = async (amendment: MessageAmendment) => {
    const db = (await source.runtime()).memoryDb;
    return amendMessage({ journal, db, forgetHistory: () => source.forgetHistory() }, amendment);
  };
  return { journal, delivery, upkeep, turns, amend };
}

/** Work left by an earlier instance (eviction, crash, deploy) resumes on first contact. */
export function resumeLeftWork({ journal, turns, upkeep }: RoomParts): void {
  turns.finishReplied();
  if (journal.nextToRun(Date.now())) void turns.drain();
  if (journal.undelivered().length > 0) upkeep.deliver();
  for (const entry of journal.awaitingApproval()) upkeep.paused(entry);
}
