// A scripted model for autonomous tasks: replies are queued per role (spec, planner, agent step,
// reflection, summary, completion check), recognised by the instructions the task loop sends.
// An unscripted spec is answered with a valid spec that restates the goal and lacks nothing.
// Usable in-process as a ChatModel (unit tests, `npm run bench:tasks`) and as the OpenAI
// stand-in's responder (tests through the worker). No vitest or Node imports.
import {
  EVALUATION_INSTRUCTIONS,
  PLANNER_INSTRUCTIONS,
  REFLECTION_INSTRUCTIONS,
  SUMMARY_INSTRUCTIONS,
} from "../../src/runtime/tasks/task-plan.ts";
import { SPEC_INSTRUCTIONS } from "../../src/runtime/tasks/task-spec.ts";
import type { ChatModel, ChatRequest, ChatResponse } from "../../src/runtime/ports/model.ts";

export type TaskRole = "spec" | "plan" | "act" | "reflect" | "summary" | "evaluate";

export type ScriptReply =
  | { text: string }
  | { toolCalls: { name: string; arguments: unknown }[] }
  /** The model call fails with this HTTP status (the stand-in) or a ModelCallError (in-process). */
  | { status: number };

export type TaskScript = Partial<Record<TaskRole, ScriptReply[]>>;

export function roleOf(systemText: string): TaskRole {
  if (systemText.startsWith(SPEC_INSTRUCTIONS.slice(0, 40))) return "spec";
  if (systemText.startsWith(PLANNER_INSTRUCTIONS.slice(0, 40))) return "plan";
  if (systemText.startsWith(REFLECTION_INSTRUCTIONS.slice(0, 40))) return "reflect";
  if (systemText.startsWith(EVALUATION_INSTRUCTIONS.slice(0, 40))) return "evaluate";
  if (systemText.startsWith(SUMMARY_INSTRUCTIONS.slice(0, 40))) return "summary";
  return "act";
}

export const json = (value: unknown): { text: string } => ({ text: JSON.stringify(value) });

/** A spec reply; `missing` entries are required inputs the task must ask for. */
export function specReply(
  goal: string,
  extra: {
    provided?: string[];
    missing?: { input: string; question: string; required: boolean }[];
    constraints?: string[];
    outputRequirements?: string[];
    risks?: string[];
  } = {},
): { text: string } {
  return json({
    goal,
    inputs: { provided: extra.provided ?? [], missing: extra.missing ?? [] },
    constraints: extra.constraints ?? [],
    outputRequirements: extra.outputRequirements ?? [],
    risks: extra.risks ?? [],
  });
}

/** What an unscripted role gets: a spec that restates the goal of the last message, else nothing useful. */
function fallbackReply(role: TaskRole, lastText: string): ScriptReply {
  if (role === "spec") return specReply(/^Goal: (.*)$/m.exec(lastText)?.[1] ?? "the goal");
  return role === "act" ? { text: "Done." } : { text: "(script ran out)" };
}

export function planReply(steps: string[], criteria: string[]): { text: string } {
  return json({
    steps: steps.map((title) => ({ title, doneWhen: `${title} is done` })),
    successCriteria: criteria,
  });
}

export function reflectReply(
  succeeded: boolean,
  extra: Record<string, unknown> = {},
): { text: string } {
  return json({
    succeeded,
    reflection: succeeded ? "The step did what it should." : "The step did not work.",
    ...extra,
  });
}

export function evaluateReply(met: boolean[], result = "All done."): { text: string } {
  return json({
    criteria: met.map((m) => ({
      met: m,
      evidence: m ? "see the step reports" : "nothing shows it",
    })),
    result,
  });
}

export interface ScriptedTaskModel {
  next(role: TaskRole): ScriptReply | undefined;
  /** Roles asked, in order. */
  readonly asked: TaskRole[];
  remaining(): number;
}

export function scriptTask(script: TaskScript): ScriptedTaskModel {
  const queues = new Map<TaskRole, ScriptReply[]>(
    Object.entries(script).map(([role, replies]) => [role as TaskRole, [...(replies ?? [])]]),
  );
  const asked: TaskRole[] = [];
  return {
    next(role) {
      asked.push(role);
      return queues.get(role)?.shift();
    },
    asked,
    remaining: () => [...queues.values()].reduce((sum, queue) => sum + queue.length, 0),
  };
}

/** The script as an in-process ChatModel; `usage` is what every call reports. */
export function taskChatModel(
  script: ScriptedTaskModel,
  options: {
    usage?: { promptTokens: number; completionTokens: number };
    fail?: (request: ChatRequest) => Error | null;
  } = {},
): ChatModel & { requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  let sequence = 0;
  return {
    backend: "openai",
    requests,
    async complete(request): Promise<ChatResponse> {
      requests.push(request);
      const failure = options.fail?.(request);
      if (failure) throw failure;
      const system = request.messages[0]?.role === "system" ? request.messages[0].content : "";
      const role = roleOf(system);
      const last = request.messages.at(-1);
      const lastText =
        last && "content" in last && typeof last.content === "string" ? last.content : "";
      const reply = script.next(role) ?? fallbackReply(role, lastText);
      const usage = options.usage ?? { promptTokens: 100, completionTokens: 20 };
      if ("status" in reply) throw new Error(`scripted failure ${reply.status}`);
      if ("toolCalls" in reply) {
        return {
          model: request.model,
          text: null,
          toolCalls: reply.toolCalls.map((call) => ({
            id: `call_${++sequence}`,
            name: call.name,
            arguments: JSON.stringify(call.arguments),
          })),
          usage,
          finishReason: "tool_calls",
        };
      }
      return { model: request.model, text: reply.text, toolCalls: [], usage, finishReason: "stop" };
    },
  };
}

/** The script as the OpenAI stand-in's responder (replies have the stand-in's step shapes). */
export function standInResponder(
  script: ScriptedTaskModel,
): (call: { messages: Record<string, unknown>[] }) => ScriptReply {
  return (call) => {
    const first = call.messages[0];
    const system =
      first?.role === "system" && typeof first.content === "string" ? first.content : "";
    const role = roleOf(system);
    const last = call.messages.at(-1);
    const lastText = typeof last?.content === "string" ? last.content : "";
    return script.next(role) ?? fallbackReply(role, lastText);
  };
}

/** The goal a task-loop call works on (its first `Goal: …` line), or "" for other calls. */
export function goalOf(call: { messages: Record<string, unknown>[] }): string {
  for (const message of call.messages) {
    if (message.role !== "user" || typeof message.content !== "string") continue;
    const goal = /^Goal: (.*)$/m.exec(message.content)?.[1];
    if (goal !== undefined) return goal;
  }
  return "";
}

/** One scripted task per goal, for tasks that run at the same time (each goal its own queues). */
export function perGoalResponder(
  scripts: Record<string, ScriptedTaskModel>,
): (call: { messages: Record<string, unknown>[] }) => ScriptReply {
  const responders = Object.fromEntries(
    Object.entries(scripts).map(([goal, script]) => [goal, standInResponder(script)]),
  );
  return (call) => responders[goalOf(call)]?.(call) ?? { text: "(no script for this goal)" };
}

/** A one-step task that completes with `result`. */
export function oneStepScript(result: string, act: ScriptReply[] = [{ text: result }]): TaskScript {
  return {
    plan: [planReply(["Do it"], ["It is done"])],
    act,
    reflect: [reflectReply(true)],
    evaluate: [evaluateReply([true], result)],
  };
}
