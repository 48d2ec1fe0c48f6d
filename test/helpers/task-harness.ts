// The task loop's host for pure tests: a scripted model (task-script.ts), two in-memory tools
// (`search`, `fetch_page`), a ticking clock, and the events and audit entries collected. No
// vitest or platform imports, so it runs in the Node `runtime` project.
import { runTask, type TaskLoopDeps } from "../../src/runtime/tasks/advance-task.ts";
import {
  DEFAULT_TASK_LIMITS,
  newTaskState,
  type AuditEntry,
  type NewTask,
  type TaskEventBody,
  type TaskLimits,
  type TaskState,
} from "../../src/runtime/tasks/task-types.ts";
import type { ToolHost } from "../../src/runtime/ports/tools.ts";
import { character, tickingClock } from "./fakes.ts";
import { scriptTask, taskChatModel, type TaskScript } from "./task-script.ts";

export interface TaskHarness {
  deps: TaskLoopDeps;
  events: TaskEventBody[];
  audit: AuditEntry[];
  /** Tool calls the in-memory host ran, as `name:{json args}`. */
  toolCalls: string[];
  model: ReturnType<typeof taskChatModel>;
  script: ReturnType<typeof scriptTask>;
}

export function searchTools(calls: string[]): ToolHost {
  return {
    async list() {
      return [
        {
          name: "search",
          description: "Search the web",
          parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
          source: "builtin",
        },
        {
          name: "fetch_page",
          description: "Fetch a page",
          parameters: {
            type: "object",
            properties: { url: { type: "string" } },
            required: ["url"],
          },
          source: "builtin",
        },
      ];
    },
    async call(name, args) {
      calls.push(`${name}:${JSON.stringify(args)}`);
      return { ok: true, content: `${name} result for ${JSON.stringify(args)}` };
    },
  };
}

export function taskHarness(
  script: TaskScript,
  options: {
    settings?: Record<string, unknown>;
    /** The scripted model's options (usage per call, calls that fail). */
    model?: Parameters<typeof taskChatModel>[1];
  } = {},
): TaskHarness {
  const scripted = scriptTask(script);
  const model = taskChatModel(scripted, options.model ?? {});
  const events: TaskEventBody[] = [];
  const toolCalls: string[] = [];
  const clock = tickingClock();
  let ids = 0;
  return {
    script: scripted,
    model,
    events,
    audit: [],
    toolCalls,
    deps: {
      model,
      models: { primary: "main", fallbacks: [], small: "small" },
      character: character(options.settings ? { settings: options.settings } : {}),
      tools: searchTools(toolCalls),
      now: () => clock.now(),
      emit: (event) => events.push(event),
      signal: new AbortController().signal,
      toolTimeoutMs: 1_000,
      maxToolResultChars: 4_000,
      stepTimeoutMs: 10_000,
      approvalWindowMs: 600_000,
      newApprovalId: () => (++ids).toString(16).padStart(16, "0"),
    },
  };
}

export function newTask(
  overrides: Partial<Omit<NewTask, "limits">> & { limits?: Partial<TaskLimits> } = {},
): TaskState {
  return newTaskState({
    taskId: "t1",
    agentId: "nova",
    roomId: "task:t1",
    goal: "Write a short report on tides",
    source: "api",
    now: 0,
    ...overrides,
    limits: { ...DEFAULT_TASK_LIMITS, ...overrides.limits },
  });
}

/** Runs to the end or a pause, collecting the audit entries. */
export async function runToPause(h: TaskHarness, state: TaskState): Promise<TaskState> {
  return runTask(state, h.deps, ({ audit }) => {
    h.audit.push(...audit);
  });
}
