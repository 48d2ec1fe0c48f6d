// The parts of one room object, put together when it starts: its turn journal (migrated and
// pruned), the delivery of replies to the surface, the upkeep around turns and the turn queue,
// each handed what it needs and none reaching back into the object. agent-room.ts answers RPC,
// schedules and queue items with them.
import type { Env } from "../../env.ts";
import type { RoomRuntime } from "../shared/agent-wiring.ts";
import type { RoomPlatform } from "../shared/reply-surface.ts";
import type { AfterReplyChain } from "./after-reply-chain.ts";
import { RoomDelivery } from "./reply-delivery.ts";
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
}

/** What the object gives its parts: its storage and platform, and its durable scheduling. */
export interface RoomSource extends Pick<RoomUpkeepOptions, "queue" | "expireAt" | "wakeAt"> {
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
    wakeAt: source.wakeAt,
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
  return { journal, delivery, upkeep, turns };
}
