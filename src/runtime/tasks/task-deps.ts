// What the task loop needs from its host (the agent's model, character and tools, a clock, an
// event sink, the cancel signal and its time limits). Its own file so that the loop
// (advance-task.ts) and its act step (act-step.ts) both take it without importing each other.
import type { Character } from "../character.ts";
import type { TaskEventBody } from "./task-types.ts";
import type { ChatModel, ModelChoice } from "../ports/model.ts";
import type { ToolHost } from "../ports/tools.ts";

export interface TaskLoopDeps {
  model: ChatModel;
  models: ModelChoice;
  character: Character;
  /** Tools the agent can call (already connected). */
  tools: ToolHost;
  now: () => number;
  emit: (event: TaskEventBody) => void;
  /** Aborted when the task is cancelled; the current step stops and the task ends `cancelled`. */
  signal: AbortSignal;
  toolTimeoutMs: number;
  maxToolResultChars: number;
  /** A step's time limit (the tool loop's deadline). */
  stepTimeoutMs: number;
  /** How long a person has to answer an approval before it counts as a denial. */
  approvalWindowMs: number;
  /** How long a person has to answer a `needs_input` question (default INPUT_WINDOW_MS). */
  inputWindowMs?: number;
  /** How long a delegated step waits for the other agent's task (default DELEGATE_WAIT_MS). */
  delegateWaitMs?: number;
  /**
   * Asked before every model call of every unit (src/clients/chat/admission.ts resolved the place;
   * the host reads its budgets): throws PlaceBudgetUsed when the place's day is used, or the
   * agent's ceiling's RateLimitedError. Absent: nothing to check beyond the start.
   */
  admitModelCall?: () => Promise<void>;
  /** A fresh, unguessable id (approvals, questions). */
  newApprovalId: () => string;
}
