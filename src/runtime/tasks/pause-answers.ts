// What ends a task's pause, as pure state changes: a person's answer to an approval (or its
// expiry's denial), a person's answer to the question of a `needs_input` task, and the result of
// the task another agent ran for a delegated step. Each returns the runnable state, or null when
// the task is not waiting for that answer (answered already, expired, cancelled), so an answer
// that comes twice changes nothing.
import { withAnswer } from "./task-spec.ts";
import type { TaskEventBody, TaskState } from "./task-types.ts";
import type { ApprovalDecision } from "../turn/turn-types.ts";
import type { ToolOutput } from "../ports/tools.ts";

type Emit = (event: TaskEventBody) => void;

/**
 * Records a person's answer to the task's pending approval (or `expired` when nobody answered in
 * time); the task becomes runnable again and its step carries on with the answer.
 */
export function answerApproval(
  previous: TaskState,
  answer: { approvalId: string; decision: ApprovalDecision; by: string | null },
  now: number,
  emit: Emit,
): TaskState | null {
  const pending = previous.approval;
  if (
    previous.status !== "awaiting_approval" ||
    !pending ||
    pending.decision ||
    pending.approvalId !== answer.approvalId
  )
    return null;
  const state = structuredClone(previous);
  state.approval = { ...pending, decision: { value: answer.decision, by: answer.by, at: now } };
  state.status = "running";
  state.pausedMs += Math.max(0, now - pending.requestedAt);
  emit({
    type: "approval_resolved",
    step: pending.step,
    tool: pending.tool,
    decision: answer.decision,
    by: answer.by,
  });
  return state;
}

/** A person answered the question of a `needs_input` task: the answer joins its spec, and it plans. */
export function answerInput(
  previous: TaskState,
  answer: { inputId: string; text: string; by: string | null },
  now: number,
  emit: Emit,
): TaskState | null {
  const pending = previous.input;
  if (
    previous.status !== "needs_input" ||
    !pending ||
    !previous.spec ||
    pending.inputId !== answer.inputId
  )
    return null;
  const state = structuredClone(previous);
  state.spec = withAnswer(previous.spec, pending.inputs, answer.text);
  state.input = null;
  state.status = "running";
  state.pausedMs += Math.max(0, now - pending.requestedAt);
  emit({ type: "input_received", by: answer.by });
  return state;
}

/** The other agent accepted the delegated task: its id, so its result can be matched later. */
export function delegationStarted(
  previous: TaskState,
  childTaskId: string,
  emit: Emit,
): TaskState | null {
  const pending = previous.delegation;
  if (previous.status !== "awaiting_delegate" || !pending || pending.childTaskId) return null;
  const state = structuredClone(previous);
  state.delegation = { ...pending, childTaskId };
  emit({
    type: "delegate_started",
    step: pending.step,
    agentId: pending.agentId,
    childTaskId,
    goal: pending.goal,
  });
  return state;
}

/**
 * The delegated step's answer: the other agent's task result (or why there is none: it failed,
 * was refused, or ran out of time), matched by the step's call id (the result may arrive before
 * the other agent's acceptance was recorded).
 */
export function answerDelegation(
  previous: TaskState,
  answer: { callId: string; childTaskId: string | null; output: ToolOutput; status: string },
  now: number,
  emit: Emit,
): TaskState | null {
  const pending = previous.delegation;
  if (
    previous.status !== "awaiting_delegate" ||
    !pending ||
    pending.output ||
    pending.callId !== answer.callId
  )
    return null;
  const state = structuredClone(previous);
  const childTaskId = pending.childTaskId ?? answer.childTaskId;
  state.delegation = { ...pending, childTaskId, output: answer.output };
  state.status = "running";
  state.pausedMs += Math.max(0, now - pending.requestedAt);
  emit({
    type: "delegate_finished",
    step: pending.step,
    agentId: pending.agentId,
    childTaskId,
    ok: answer.output.ok,
    status: answer.status,
  });
  return state;
}
