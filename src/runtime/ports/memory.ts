// The memories the runtime keeps and the store it keeps them in: what a memory is (its type,
// content and attachments), a message as it arrives, and the MemoryStore interface the platform
// implements (src/db/memory/ on D1).

export type MemoryType =
  | "message"
  | "fact"
  | "description"
  | "lore"
  | "document"
  | "fragment"
  | "summary";

export interface Attachment {
  url: string;
  contentType?: string;
  title?: string;
}

export interface MemoryContent {
  text: string;
  /** Who said it: "user" or "agent" for messages. */
  role?: "user" | "agent";
  source?: string;
  userName?: string;
  actions?: string[];
  attachments?: Attachment[];
  inReplyTo?: string;
}

export interface Memory {
  id: string;
  type: MemoryType;
  agentId: string;
  roomId: string | null;
  userId: string | null;
  /** A fragment's document (knowledge); null or absent otherwise. */
  parentId?: string | null;
  content: MemoryContent;
  metadata: Record<string, unknown>;
  /** Milliseconds since the epoch. */
  createdAt: number;
}

export interface InboundMessage {
  memory: Memory;
  userName?: string;
  source: string;
}

export interface MemoryStore {
  /** Stores the inbound message with its user, room and participant rows. Idempotent by id. */
  saveInbound(message: InboundMessage): Promise<void>;
  /** Stores one memory. Idempotent by id: a second save of the same id changes nothing. */
  saveMemory(memory: Memory): Promise<void>;
  /** Newest first, at most `limit`, optionally only those created before `beforeMs`. */
  recentMessages(query: {
    agentId: string;
    roomId: string;
    limit: number;
    beforeMs?: number;
  }): Promise<Memory[]>;
  /**
   * Counts one interaction of a user with the agent; a repeat for the same turn is ignored.
   * Returns the user's interaction count afterwards.
   */
  recordInteraction(input: {
    agentId: string;
    userId: string;
    turnId: string;
    at: number;
  }): Promise<number>;
  /** Stores a memory that replaces an earlier version with the same id (a user's profile). */
  upsertMemory(memory: Memory): Promise<void>;
  /**
   * `add` as saveMemory stores each and `replace` as upsertMemory does, in one write: all of it
   * or none (a reflection's facts with the person's profile).
   */
  saveTogether(input: { add: Memory[]; replace: Memory[] }): Promise<void>;
  /** A room's messages created after `afterMs`, oldest first, at most `limit`. */
  roomMessagesAfter(query: {
    agentId: string;
    roomId: string;
    afterMs: number;
    limit: number;
  }): Promise<Memory[]>;
  /** The newest summary of a room, if any. */
  latestSummary(query: { agentId: string; roomId: string }): Promise<Memory | null>;
}
