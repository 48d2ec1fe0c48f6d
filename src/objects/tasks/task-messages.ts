// What a task started from Discord posts in its channel: a line per plan, per finished step and
// per delegated step while it works, then the result (or the honest report of why it stopped).
import { clip } from "../../runtime/tasks/task-plan.ts";
import type { TaskEventBody, TaskState } from "../../runtime/tasks/task-types.ts";

/** One progress message, or null for events not worth a message. */
export function taskProgressLine(event: TaskEventBody): string | null {
  switch (event.type) {
    case "plan":
      return clip(
        `📋 Plan${event.revision > 1 ? ` (revision ${event.revision})` : ""}:\n${event.steps.map((step, i) => `${i + 1}. ${step.title}${step.status === "done" ? " ✓" : ""}`).join("\n")}`,
        1_900,
      );
    case "step_finished":
      return clip(
        `${event.outcome === "succeeded" ? "✅" : "❌"} Step ${event.step}: ${event.output}`,
        1_900,
      );
    case "delegate_started":
      return clip(`🤝 Step ${event.step} handed to agent ${event.agentId}: ${event.goal}`, 1_900);
    case "delegate_finished":
      return `${event.ok ? "📥" : "⚠️"} Agent ${event.agentId}'s task for step ${event.step}: ${event.status}`;
    default:
      return null;
  }
}

export function taskResultText(state: TaskState): string {
  if (state.status === "completed") return `🏁 Done: ${state.result?.text ?? ""}`;
  return `⏹️ Task ${state.status}.\n${state.report ?? ""}`;
}
