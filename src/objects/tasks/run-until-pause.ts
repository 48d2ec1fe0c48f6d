// Runs one task in the AgentTasks object until it ends or pauses: one unit of work at a time
// (src/runtime/tasks/advance-task.ts), its state and audit saved after each, the crash counter raised
// before each (a unit interrupted three times fails the task), and each unit's tokens added to
// the agent's spend at once, so a task starting while others run is admitted against the
// ceiling with their spend so far. A setup failure (or a spent ceiling) ends the task `failed`.
import { MODEL_NOT_CONFIGURED_MESSAGE } from "../../config.ts";
import { errorField, log } from "../../log.ts";
import { effectiveServers } from "../../mcp-registry.ts";
import { AppError, ModelNotConfiguredError, NotFoundError } from "../../runtime/util/errors.ts";
import {
  assertWithinDailyBudget,
  dailyCeiling,
  readDayBudgets,
  utcDay,
} from "../../runtime/turn/spend.ts";
import {
  advanceTask,
  markStarted,
  stopTask,
  type TaskLoopDeps,
} from "../../runtime/tasks/advance-task.ts";
import {
  type AuditEntry,
  isPaused,
  isTerminal,
  type TaskEventBody,
  type TaskState,
} from "../../runtime/tasks/task-types.ts";
import type { TurnUsage } from "../../runtime/turn/turn-types.ts";
import { originOf } from "../../runtime/access/principal.ts";
import { modelChoiceFor } from "../../runtime/turn/turn-runner.ts";
import { DEFAULT_LIMITS } from "../../runtime/turn/turn-types.ts";
import { APPROVAL_WINDOW_MS, newApprovalId } from "../shared/approvals.ts";
import type { TurnOrigin } from "../shared/turn-origin.ts";
import type { RoomRuntime } from "../shared/agent-wiring.ts";
import { MAX_STEP_ATTEMPTS, type TaskStore } from "./task-store.ts";

export interface TaskRunContext {
  agentId: string;
  store: TaskStore;
  runtime(): Promise<RoomRuntime>;
  emit(taskId: string, event: TaskEventBody): void;
  /** Where the task came from, for the plugins (a proposal is shown there). */
  origin(taskId: string): TurnOrigin;
}

/** Runs the task's units until it ends or pauses; returns the state it was left in. */
export async function runTaskUnits(
  context: TaskRunContext,
  initial: TaskState,
  signal: AbortSignal,
): Promise<TaskState> {
  const { store, agentId } = context;
  let state = initial;
  try {
    const runtime = await context.runtime();
    const deps = await loopDeps(context, runtime, state, signal);
    // A task's later units were admitted when it started (as a chat turn's tool rounds are).
    if (state.status === "queued") {
      const ceiling = dailyCeiling(deps.character, runtime.config.dailyTokenLimit);
      await assertWithinDailyBudget(runtime.spend, agentId, ceiling, Date.now());
      const taskId = state.taskId;
      state = markStarted(state, Date.now(), (event) => context.emit(taskId, event));
      store.save(state, [], Date.now());
    }
    while (!isTerminal(state.status) && !isPaused(state.status)) {
      if (store.beginAttempt(state.taskId) > MAX_STEP_ATTEMPTS) {
        throw new AppError(
          "internal",
          500,
          `the task was interrupted ${MAX_STEP_ATTEMPTS} times in one step and was given up`,
        );
      }
      // What other agents spent for this task (delegate_task) counts against this agent's
      // ceiling as well as theirs: asking another agent never spends past one's own budget.
      const before = structuredClone(state.usage);
      const advance = await advanceTask(state, deps);
      state = advance.state;
      store.save(state, advance.audit, Date.now());
      await recordSpend(runtime, before, state, advance.audit);
    }
  } catch (error) {
    // Setting up failed (agent deleted, daily budget spent) or the object keeps crashing.
    const failure =
      error instanceof AppError
        ? error
        : new AppError("internal", 500, "the task failed unexpectedly; see the worker logs");
    if (!(error instanceof AppError))
      log.error("task_failed", { agent: agentId, taskId: state.taskId, error: errorField(error) });
    const current = store.get(state.taskId)?.state ?? state;
    if (!isTerminal(current.status)) {
      const failed = { ...current, error: { code: failure.code, message: failure.message } };
      state = stopTask(
        failed,
        Date.now(),
        (event) => context.emit(failed.taskId, event),
        signal.aborted ? "cancelled" : "error",
        signal.aborted ? "the task was cancelled" : failure.message,
      );
      store.save(state, [], Date.now());
    } else state = current;
  }
  return state;
}

/** The task's own model tokens: what other agents spent for it counts on their ceilings. */
async function loopDeps(
  context: TaskRunContext,
  runtime: RoomRuntime,
  state: TaskState,
  signal: AbortSignal,
): Promise<TaskLoopDeps> {
  const record = await runtime.agents.get(context.agentId);
  if (!record) throw new NotFoundError(`no agent with id "${context.agentId}"`);
  const character = record.character;
  const model = runtime.chat.model;
  if (!model) throw new ModelNotConfiguredError(MODEL_NOT_CONFIGURED_MESSAGE);
  await runtime.mcp.prepare(
    effectiveServers(
      character.settings.mcpServers,
      await runtime.mcpPlatform.servers.list(context.agentId),
    ),
  );
  // ask_agent is offered with the agents this character may ask; plugins see the task's character.
  runtime.delegation.configure(character);
  runtime.plugins.prepare(character, context.origin(state.taskId));
  return {
    model,
    models: modelChoiceFor(character, runtime.chat.models),
    character,
    tools: runtime.tools,
    now: () => Date.now(),
    emit: (event) => context.emit(state.taskId, event),
    signal,
    toolTimeoutMs: DEFAULT_LIMITS.toolTimeoutMs,
    maxToolResultChars: DEFAULT_LIMITS.maxToolResultChars,
    stepTimeoutMs: DEFAULT_LIMITS.turnTimeoutMs,
    approvalWindowMs: APPROVAL_WINDOW_MS,
    newApprovalId,
    // A task started in a chat place with budgets reads them (with the agent's ceiling, one D1
    // read) before every model call: a member over theirs mid-task stops it there.
    ...(state.place?.budgets
      ? {
          admitModelCall: async () => {
            const used = await readDayBudgets(runtime.spend, {
              agentId: context.agentId,
              principal: state.requester,
              place: state.place,
              ceiling: dailyCeiling(character, runtime.config.dailyTokenLimit),
              now: Date.now(),
            });
            if (used) throw used;
          },
        }
      : {}),
  };
}

/**
 * What one unit of the task spent: its own model use as the task's usage record (one record per
 * task, added to unit by unit), and what other agents spent for it (delegate_task) onto this
 * agent's day only, as their own turns recorded it. Counting never fails a task: a lost count only
 * makes the ceiling more lenient (and is logged).
 */
async function recordSpend(
  runtime: RoomRuntime,
  before: TurnUsage,
  state: TaskState,
  audit: readonly AuditEntry[],
): Promise<void> {
  const now = state.usage;
  const inputTokens = now.promptTokens - before.promptTokens;
  const cachedInputTokens = (now.cachedPromptTokens ?? 0) - (before.cachedPromptTokens ?? 0);
  const outputTokens = now.completionTokens - before.completionTokens;
  const modelCalls = now.modelCalls - before.modelCalls;
  const delegated = tokensOf(now.delegated) - tokensOf(before.delegated);
  const origin = state.requester ? originOf(state.requester) : null;
  try {
    if (inputTokens + outputTokens > 0 || modelCalls > 0)
      await runtime.spend.record({
        id: state.taskId,
        agentId: state.agentId,
        kind: "task",
        roomId: state.roomId,
        userId: state.requestedBy ?? (origin?.kind === "member" ? origin.userId : null),
        guildId: origin?.kind === "member" ? (origin.guildId ?? null) : null,
        source: state.source,
        model: state.steps.at(-1)?.model ?? null,
        inputTokens,
        cachedInputTokens,
        outputTokens,
        modelCalls,
        tools: audit
          .filter((entry) => entry.kind === undefined)
          .map((entry) => ({ name: entry.tool, ok: entry.ok })),
        error: state.status === "failed" ? "task_failed" : null,
        // A task step composes no retrieved memory: no query embedding waits in it.
        lateEmbeddings: 0,
        at: Date.now(),
      });
    if (delegated > 0) await runtime.spend.add(state.agentId, utcDay(Date.now()), delegated);
  } catch (error) {
    log.warn("task_spend_not_recorded", {
      agent: state.agentId,
      tokens: inputTokens + outputTokens + delegated,
      error: errorField(error),
    });
  }
}

const tokensOf = (usage: { promptTokens: number; completionTokens: number } | undefined) =>
  usage ? usage.promptTokens + usage.completionTokens : 0;
