// The shapes of the JSON columns a Durable Object keeps in its SQLite (the turn journal, the task
// store), checked when read back by the one JSON-column checker (src/db/json-column.ts), not cast:
// a row that does not match is a clear error naming the row and the field, not a crash deep inside
// a turn. The schemas are loose objects, so a field this version does not know is kept as it was;
// fields added after rows were first written get the default older code assumed. The stores give
// each column's shape its saved-state version (turn-journal.ts, task-store.ts, schedule-store.ts).
import { z } from "zod";
import type { ErrorCode, SerializedError } from "../../runtime/util/errors.ts";
import type {
  ApprovalDecision,
  StopReason,
  ToolCallRecord,
  ToolLoopCheckpoint,
  TurnInput,
  TurnOutcome,
  TurnUsage,
  UsedMemory,
} from "../../runtime/turn/turn-types.ts";
import type { Attachment, Memory, MemoryType } from "../../runtime/ports/memory.ts";
import type { ChatMessage, ToolCall } from "../../runtime/ports/model.ts";
import type { DeliveryTarget, PostedPrompt } from "./reply-surface.ts";
import { PrincipalShape } from "../../runtime/access/principal-shape.ts";
import { PlacePolicyShape } from "../../runtime/access/place-policy.ts";

/** Names a column of this object's storage for the checker's errors: `turn t1: outcome`. */
export function inObjectStorage(what: string): string {
  return `${what} in this object's storage`;
}

/** z.enum over every member of a string union (the mapped type makes a missing one an error). */
export function everyOf<T extends string>(values: { [K in T]: K }) {
  return z.enum(values);
}

const ERROR_CODES: { [K in ErrorCode]: K } = {
  validation: "validation",
  unauthorized: "unauthorized",
  forbidden: "forbidden",
  not_found: "not_found",
  conflict: "conflict",
  payload_too_large: "payload_too_large",
  rate_limited: "rate_limited",
  upstream: "upstream",
  model: "model",
  model_not_configured: "model_not_configured",
  not_configured: "not_configured",
  tool: "tool",
  embedding: "embedding",
  dimension_mismatch: "dimension_mismatch",
  database_unavailable: "database_unavailable",
  internal: "internal",
};

export const ApprovalDecisionShape: z.ZodType<ApprovalDecision> = everyOf<ApprovalDecision>({
  approved: "approved",
  denied: "denied",
  expired: "expired",
});

const MemoryTypeShape: z.ZodType<MemoryType> = everyOf<MemoryType>({
  message: "message",
  fact: "fact",
  description: "description",
  lore: "lore",
  document: "document",
  fragment: "fragment",
  summary: "summary",
});

const AttachmentShape: z.ZodType<Attachment> = z.looseObject({
  url: z.string(),
  contentType: z.string().optional(),
  title: z.string().optional(),
});

export const TurnInputShape: z.ZodType<TurnInput> = z.looseObject({
  turnId: z.string(),
  agentId: z.string(),
  roomId: z.string(),
  userId: z.string(),
  userName: z.string().optional(),
  text: z.string(),
  attachments: z.array(AttachmentShape),
  source: z.string(),
  isDirect: z.boolean(),
  mentioned: z.boolean(),
  fromBot: z.boolean(),
  receivedAt: z.number(),
  delegation: z.looseObject({ chain: z.array(z.string()) }).optional(),
  // Added with the principal model (issue 38): turns journalled before it have none.
  principal: PrincipalShape.optional(),
  // The place's rules decide what the model is offered: read back checked, as the principal is.
  place: PlacePolicyShape.optional(),
});

export const TurnUsageShape: z.ZodType<TurnUsage> = z.looseObject({
  promptTokens: z.number(),
  completionTokens: z.number(),
  modelCalls: z.number(),
});

const ToolCallRecordShape: z.ZodType<ToolCallRecord> = z.looseObject({
  id: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  ok: z.boolean(),
  output: z.string(),
  cached: z.boolean(),
  durationMs: z.number(),
  model: z.string(),
  approval: ApprovalDecisionShape.optional(),
  usage: z
    .looseObject({ promptTokens: z.number(), completionTokens: z.number(), modelCalls: z.number() })
    .optional(),
});

const UsedMemoryShape: z.ZodType<UsedMemory> = z.looseObject({
  id: z.string(),
  type: MemoryTypeShape,
  text: z.string(),
  score: z.number().nullable(),
});

const MemoryShape: z.ZodType<Memory> = z.looseObject({
  id: z.string(),
  type: MemoryTypeShape,
  agentId: z.string(),
  roomId: z.string().nullable(),
  userId: z.string().nullable(),
  parentId: z.string().nullable().optional(),
  content: z.looseObject({
    text: z.string(),
    role: z.enum(["user", "agent"]).optional(),
    source: z.string().optional(),
    userName: z.string().optional(),
    actions: z.array(z.string()).optional(),
    attachments: z.array(AttachmentShape).optional(),
    inReplyTo: z.string().optional(),
  }),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: z.number(),
});

export const TurnOutcomeShape: z.ZodType<TurnOutcome> = z.looseObject({
  turnId: z.string(),
  status: z.enum(["replied", "ignored"]),
  reply: z.looseObject({ text: z.string() }).nullable(),
  actions: z.array(z.string()),
  toolCalls: z.array(ToolCallRecordShape),
  usage: TurnUsageShape,
  model: z.string().nullable(),
  stopReason: everyOf<StopReason>({
    completed: "completed",
    max_steps: "max_steps",
    max_failures: "max_failures",
    timeout: "timeout",
    ignored: "ignored",
  }),
  // Both added after the first outcomes were journalled.
  memories: z.array(UsedMemoryShape).default([]),
  replyMemory: MemoryShape.nullable().default(null),
  messageId: z.string(),
  replyId: z.string().nullable(),
  spentTokens: z.number().optional(),
  spent: z
    .object({ inputTokens: z.number(), outputTokens: z.number(), modelCalls: z.number() })
    .optional(),
  queryEmbedding: z.enum(["none", "embedded", "late"]).optional(),
  notice: z.string().optional(),
});

export const SerializedErrorShape: z.ZodType<SerializedError> = z.looseObject({
  code: everyOf(ERROR_CODES),
  status: z.number(),
  message: z.string(),
  details: z.unknown().optional(),
});

const ToolCallShape: z.ZodType<ToolCall> = z.looseObject({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
});

const ChatMessageShape: z.ZodType<ChatMessage> = z.discriminatedUnion("role", [
  z.looseObject({ role: z.literal("system"), content: z.string() }),
  z.looseObject({
    role: z.literal("user"),
    content: z.string(),
    name: z.string().optional(),
    images: z.array(z.string()).optional(),
  }),
  z.looseObject({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    toolCalls: z.array(ToolCallShape).optional(),
  }),
  z.looseObject({ role: z.literal("tool"), toolCallId: z.string(), content: z.string() }),
]);

export const CheckpointShape: z.ZodType<ToolLoopCheckpoint> = z.looseObject({
  messages: z.array(ChatMessageShape),
  turnStart: z.number(),
  step: z.number(),
  consecutiveFailures: z.number(),
  records: z.array(ToolCallRecordShape),
  pendingCalls: z.array(ToolCallShape),
  model: z.string(),
  modelIndex: z.number(),
  usage: TurnUsageShape,
  memories: z.array(UsedMemoryShape).optional(),
});

/** A surface's delivery target: only its kind is the room's to check; the surface checks the rest. */
export const DeliveryTargetShape: z.ZodType<DeliveryTarget> = z.looseObject({ kind: z.string() });

/** A surface's posted prompt: opaque to the room. */
export const PostedPromptShape: z.ZodType<PostedPrompt> = z.record(z.string(), z.unknown());

export const DecisionShape = z.looseObject({
  value: ApprovalDecisionShape,
  by: z.string().nullable(),
  at: z.number(),
});
