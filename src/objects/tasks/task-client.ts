// How the worker reaches an agent's AgentTasks object (named by the agent id). A refusal that
// travels as data (a full queue) becomes its typed error here. The casts live here, once: workers-types maps RPC results through its Serializable type, which collapses on
// `unknown` fields (tool arguments in the audit trail) although they are plain JSON at runtime.
import type { Env } from "../../env.ts";
import type { TaskEvent, TaskState } from "../../runtime/tasks/task-types.ts";
import { RateLimitedError } from "../../runtime/util/errors.ts";
import { currentTraceparent } from "../../trace-context.ts";
import type {
  CreateTaskRequest,
  CreateTaskResult,
  ScheduleRequest,
  ScheduleResult,
  TaskApprovalClick,
  TaskApprovalResult,
  TaskInputAnswer,
  TaskInputResult,
  TaskQuestionOpen,
  TaskView,
} from "./task-requests.ts";
import type { ScheduleRecord } from "./schedule-store.ts";

function stub(env: Env, agentId: string) {
  return env.TASKS.getByName(agentId);
}

/** Starts a task; a full queue (MAX_QUEUED_TASKS waiting) is a RateLimitedError (429). */
export async function createTask(
  env: Env,
  agentId: string,
  request: CreateTaskRequest,
): Promise<{ taskId: string }> {
  const traceparent = request.traceparent ?? currentTraceparent();
  const result: CreateTaskResult = await stub(env, agentId).createTask(
    traceparent ? { ...request, traceparent } : request,
  );
  if (!result.ok) throw new RateLimitedError(result.message, result.retryAfterSeconds);
  return { taskId: result.taskId };
}

export async function getTask(env: Env, agentId: string, taskId: string): Promise<TaskView | null> {
  const view: unknown = await stub(env, agentId).getTask(taskId);
  return view as TaskView | null;
}

export async function listTasks(env: Env, agentId: string, limit: number): Promise<TaskState[]> {
  const states: unknown = await stub(env, agentId).listTasks(limit);
  return states as TaskState[];
}

export async function cancelTask(
  env: Env,
  agentId: string,
  taskId: string,
): Promise<TaskState | null> {
  const state: unknown = await stub(env, agentId).cancel(taskId);
  return state as TaskState | null;
}

export async function taskEvents(
  env: Env,
  agentId: string,
  taskId: string,
  afterId: number,
  limit: number,
): Promise<{ events: { id: number; event: TaskEvent }[]; finished: boolean } | null> {
  const page: unknown = await stub(env, agentId).taskEvents(taskId, afterId, limit);
  return page as { events: { id: number; event: TaskEvent }[]; finished: boolean } | null;
}

/** The task's events as a live server-sent-event stream from its object (see event-feed.ts). */
export async function watchTask(
  env: Env,
  agentId: string,
  taskId: string,
  afterId: number,
): Promise<{ stream: ReadableStream<Uint8Array> } | "busy" | null> {
  const watched: unknown = await stub(env, agentId).watchTask(taskId, afterId);
  return watched as { stream: ReadableStream<Uint8Array> } | "busy" | null;
}

/** A click on a task's Approve / Deny button (its custom id names the agent). */
export async function answerTaskApprovalClick(
  env: Env,
  agentId: string,
  click: TaskApprovalClick,
): Promise<TaskApprovalResult> {
  return await stub(env, agentId).answerClick(click);
}

/** The API's answer to a task waiting for approval; null when there is no such task. */
export async function answerTaskApproval(
  env: Env,
  agentId: string,
  taskId: string,
  approve: boolean,
): Promise<TaskApprovalResult | null> {
  return await stub(env, agentId).answerFromApi(taskId, approve);
}

/** The API's answer to a `needs_input` task's question; null when there is no such task. */
export async function answerTaskInput(
  env: Env,
  agentId: string,
  taskId: string,
  text: string,
): Promise<TaskInputResult | null> {
  return await stub(env, agentId).answerInputFromApi(taskId, text);
}

/** A click on a question's Answer button (its custom id names the agent). */
export async function openTaskQuestion(
  env: Env,
  agentId: string,
  inputId: string,
  userId: string,
): Promise<TaskQuestionOpen> {
  return await stub(env, agentId).openQuestion(inputId, userId);
}

/** A question's modal, submitted. */
export async function answerTaskQuestion(
  env: Env,
  agentId: string,
  answer: TaskInputAnswer,
): Promise<TaskInputResult> {
  return await stub(env, agentId).answerQuestion(answer);
}

export async function createSchedule(
  env: Env,
  agentId: string,
  request: ScheduleRequest,
): Promise<ScheduleResult> {
  const result: unknown = await stub(env, agentId).createTaskSchedule(request);
  return result as ScheduleResult;
}

export async function listSchedules(env: Env, agentId: string): Promise<ScheduleRecord[]> {
  return await stub(env, agentId).taskSchedules();
}

export async function deleteSchedule(
  env: Env,
  agentId: string,
  scheduleId: string,
): Promise<boolean> {
  return await stub(env, agentId).deleteTaskSchedule(scheduleId);
}

/** Stops a deleted agent's schedules and unfinished tasks. */
export async function stopAgentTasks(
  env: Env,
  agentId: string,
): Promise<{ schedules: number; tasks: number }> {
  return await stub(env, agentId).stopAll();
}
