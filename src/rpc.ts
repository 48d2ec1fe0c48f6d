// What callers may ask of each Durable Object over RPC, as interfaces: src/env.ts types its
// namespaces with these, so the bindings stay typed without env.ts importing the classes (which
// import Env). Each class implements its interface; schedule and queue callbacks are left out.
import type { HistoryQuery } from "./db/memory/message-history.ts";
import type { BucketState, RateRule } from "./rate-limits/token-bucket.ts";
import type { DiscordRoute, RateLimitSeen } from "./rate-limits/discord-buckets.ts";
import type { TaskState } from "./runtime/tasks/task-types.ts";
import type {
  AmendmentResult,
  ApprovalAnswer,
  ApprovalAnswerResult,
  EnqueueTurnRequest,
  MessageAmendment,
  RoomHistoryPage,
  StreamedTurnResult,
  SubmitTurnRequest,
  TurnResult,
} from "./objects/conversation/room-types.ts";
import type {
  CreateTaskRequest,
  CreateTaskResult,
  DelegationNotice,
  ScheduleRequest,
  ScheduleResult,
  TaskApprovalClick,
  TaskApprovalResult,
  TaskEventsPage,
  TaskInputAnswer,
  TaskInputResult,
  TaskQuestionOpen,
  TaskView,
} from "./objects/tasks/task-requests.ts";
import type { ScheduleRecord } from "./objects/tasks/schedule-store.ts";
import type { SchemaState } from "./db/schema-migrator.ts";

/** A chat room, named `<agentId>:<roomId>`. */
export interface AgentRoomRpc extends Rpc.DurableObjectBranded {
  submitTurn(request: SubmitTurnRequest): Promise<TurnResult>;
  streamTurn(request: SubmitTurnRequest): Promise<StreamedTurnResult>;
  enqueueTurn(request: EnqueueTurnRequest): Promise<{ turnId: string; duplicate: boolean }>;
  resolveApproval(answer: ApprovalAnswer): Promise<ApprovalAnswerResult>;
  amendMessage(amendment: MessageAmendment): Promise<AmendmentResult>;
  readHistory(query: HistoryQuery): Promise<RoomHistoryPage>;
  forgetHistory(): Promise<void>;
}

/** An agent's autonomous tasks and schedules, named by the agent id. */
export interface AgentTasksRpc extends Rpc.DurableObjectBranded {
  createTask(request: CreateTaskRequest): Promise<CreateTaskResult>;
  getTask(taskId: string): Promise<TaskView | null>;
  listTasks(limit: number): Promise<TaskState[]>;
  taskEvents(taskId: string, afterId: number, limit: number): Promise<TaskEventsPage | null>;
  watchTask(
    taskId: string,
    afterId: number,
  ): Promise<{ stream: ReadableStream<Uint8Array> } | "busy" | null>;
  cancel(taskId: string): Promise<TaskState | null>;
  answerClick(click: TaskApprovalClick): Promise<TaskApprovalResult>;
  answerFromApi(taskId: string, approve: boolean): Promise<TaskApprovalResult | null>;
  answerInputFromApi(taskId: string, text: string): Promise<TaskInputResult | null>;
  openQuestion(inputId: string, userId: string): Promise<TaskQuestionOpen>;
  answerQuestion(answer: TaskInputAnswer): Promise<TaskInputResult>;
  /** Another agent's task, delegated by one of this agent's task steps, finished. */
  delegationFinished(notice: DelegationNotice): Promise<void>;
  createTaskSchedule(request: ScheduleRequest): Promise<ScheduleResult>;
  taskSchedules(): Promise<ScheduleRecord[]>;
  deleteTaskSchedule(scheduleId: string): Promise<boolean>;
  stopAll(): Promise<{ schedules: number; tasks: number }>;
}

/** One rate-limited key's token bucket, named by the key. */
export interface RateLimiterRpc extends Rpc.DurableObjectBranded {
  charge(rule: RateRule, cost: number): BucketState;
}

/** What the bot's rooms know of Discord's REST rate limits, named `discord-rest:<application id>`. */
export interface DiscordRestLimiterRpc extends Rpc.DurableObjectBranded {
  reserve(route: DiscordRoute): number;
  observe(route: DiscordRoute, seen: RateLimitSeen): void;
}

/** An agent's Instagram publishing, named by the agent id. */
export interface PostPublisherRpc extends Rpc.DurableObjectBranded {
  publishPost(postId: string): Promise<void>;
}

/** The one object ("schema") that brings D1 up to the bundled migrations. */
export interface SchemaGateRpc extends Rpc.DurableObjectBranded {
  ensure(): Promise<SchemaState>;
}

/** One Discord Gateway shard's connection as /health shows it. */
export interface ShardStatus {
  /** "off" unless DISCORD_GATEWAY=true and a bot token is set. */
  state: "off" | "disconnected" | "connecting" | "identifying" | "resuming" | "ready" | "stopped";
  connected: boolean;
  resuming: boolean;
  reconnects: number;
  identifies: number;
  resumes: number;
  lastEvent: string | null;
  lastEventAt: number | null;
  lastClose: { code: number; at: number } | null;
  /** Messages handed to rooms as turns, edits and deletions passed on. */
  eventsHandled: number;
  /** Events received and not yet handed to their rooms. */
  inFlight: number;
  /** Why Discord refused for good (until the token changes). */
  stoppedReason: string | null;
}

/** The bot's Gateway: every shard summed up (the worst state, the counters added), then each. */
export interface GatewayStatus extends ShardStatus {
  /** The shard count running (0 before the first start). */
  shardCount: number;
  /** A change of count under way: the old set serves until `ready` reaches `to`, or `deadline`. */
  resharding: { from: number; to: number; ready: number; deadline: number } | null;
  /** The plan's shards, then during a re-shard the old set's (`retiring`). */
  shards: Array<ShardStatus & { shard: [number, number]; retiring: boolean }>;
}

/**
 * The bot's Discord Gateway. The object named by the application id plans the shards (start,
 * status, identifySlot, isCurrent, shardReady); the objects named `shard:<i>/<n>` each hold one
 * connection (startShard, shardStatus, retire).
 */
export interface DiscordGatewayRpc extends Rpc.DurableObjectBranded {
  start(): Promise<GatewayStatus>;
  status(): Promise<GatewayStatus>;
  /** Milliseconds this shard waits before its IDENTIFY (0: go now, the slot is taken). */
  identifySlot(
    shard: number,
    limit: { remaining: number; reset_after: number; max_concurrency: number } | null,
  ): Promise<number>;
  /** Whether a shard of a plan of `count` is still wanted. */
  isCurrent(count: number): Promise<boolean>;
  /** A shard is READY with its servers (or RESUMED): the last of a new set retires the old one. */
  shardReady(index: number, count: number): Promise<void>;
  startShard(index: number, count: number): Promise<ShardStatus>;
  shardStatus(): Promise<ShardStatus>;
  /** Close the connection for good and forget everything (the shard count changed). */
  retire(): Promise<void>;
}
