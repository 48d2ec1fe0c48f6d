// The model <-> tools loop of one turn: ask the model, run the tools it calls, feed the results
// back, until it answers in text or a bound is hit (maxSteps model rounds, maxConsecutiveFailures
// failed tool calls in a row, or the turn's deadline). A bound ends with a clear final message.
// A call to a tool that needs a person's approval pauses the loop when the surface can ask: the
// loop returns a checkpoint (plain data) and is later resumed from it with the person's decision.
// A deferred tool (delegate_task in a task step) pauses it the same way, and is resumed with the
// output its host got for it (the other agent's task result).
import { type ModelSession, transcriptForFallback } from "./model-session.ts";
import type { ToolExecutor } from "./tool-executor.ts";
import { TIMEOUT_REPLY } from "./turn-deadline.ts";
import type { Principal } from "../access/principal.ts";
import type { PlacePolicy } from "../access/place-policy.ts";
import type {
  ApprovalDecision,
  StopReason,
  ToolCallRecord,
  ToolLoopCheckpoint,
  TurnObserver,
} from "./turn-types.ts";
import type { EventSink } from "../ports/events.ts";
import type { ChatMessage, ToolCall, ToolSpec } from "../ports/model.ts";
import type { DelegationContext, ToolOutput } from "../ports/tools.ts";

export interface ToolLoopInput {
  session: ModelSession;
  executor: ToolExecutor;
  events: EventSink;
  now: () => number;
  ids: {
    turnId: string;
    agentId: string;
    roomId: string;
    userId: string;
    /** Who asked, when another agent did: tools that ask agents check depth and cycles. */
    delegation?: DelegationContext;
    /** Who the turn or task acts for: tools that reach other agents or shared memory ask with it. */
    principal?: Principal;
    /** The chat place's rules: work asked of other agents carries them on. */
    place?: PlacePolicy;
  };
  messages: ChatMessage[];
  /** Index in `messages` where this turn's own messages begin (for failover). */
  turnStart: number;
  tools: ToolSpec[];
  temperature?: number;
  maxOutputTokens?: number;
  maxSteps: number;
  maxConsecutiveFailures: number;
  signal: AbortSignal;
  /** A call needing approval pauses the loop (instead of being refused) when this is set. */
  canAskApproval?: boolean;
  /**
   * Whether a call to a `deferred` tool pauses the loop for its host to answer (task steps); a call
   * it declines runs through the executor like any other (whose host then says why not).
   */
  defer?: (tool: string, args: Record<string, unknown>) => boolean;
  /**
   * Carry on from a pause; `messages` and `turnStart` are then taken from the checkpoint. The
   * first pending call gets the person's `decision`, or (a deferred call) the `output` its host got.
   */
  resume?: { checkpoint: ToolLoopCheckpoint; decision?: ApprovalDecision; output?: ToolOutput };
  /** Sees text as it is written and tool calls as they run (streaming replies). */
  observer?: TurnObserver;
}

export type ToolLoopResult =
  | {
      kind: "reply";
      text: string;
      stopReason: StopReason;
      toolCalls: ToolCallRecord[];
      /** The model that wrote the final text; null when a bound ended the turn before any answer. */
      model: string | null;
    }
  | {
      kind: "paused";
      /** Waiting for a person's approval, or for the host to answer a deferred call. */
      reason: "approval" | "deferred";
      tool: string;
      arguments: Record<string, unknown>;
      checkpoint: ToolLoopCheckpoint;
      /** A deferred call a person approved first: the decision, to record with its output. */
      approval?: ApprovalDecision;
    };

/** Where the loop is: what a checkpoint keeps, and what it resumes from. */
interface LoopState {
  messages: ChatMessage[];
  turnStart: number;
  records: ToolCallRecord[];
  consecutiveFailures: number;
  step: number;
  /** Calls of the latest model response still to run; a resume's answer is for the first. */
  pending: ToolCall[];
  model: string;
}

/** A resumed loop's answer for its first pending call: a person's decision, or a host's output. */
type Answer = { callId: string; decision?: ApprovalDecision; output?: ToolOutput };
type Paused = Extract<ToolLoopResult, { kind: "paused" }>;

export async function runToolLoop(input: ToolLoopInput): Promise<ToolLoopResult> {
  const from = input.resume?.checkpoint;
  const state: LoopState = {
    messages: from ? [...from.messages] : input.messages,
    turnStart: from?.turnStart ?? input.turnStart,
    records: from ? [...from.records] : [],
    consecutiveFailures: from?.consecutiveFailures ?? 0,
    step: from?.step ?? 0,
    pending: from ? [...from.pendingCalls] : [],
    model: from?.model ?? "",
  };
  const first = state.pending[0];
  const answer: Answer | null =
    input.resume && first
      ? { callId: first.id, decision: input.resume.decision, output: input.resume.output }
      : null;
  const onFailover = (): ChatMessage[] => {
    input.executor.clearCache();
    state.messages = transcriptForFallback(state.messages, state.turnStart);
    return state.messages;
  };

  for (;;) {
    const paused = await runPendingCalls(input, state, answer);
    if (paused) return paused;
    if (input.signal.aborted) break;
    if (state.consecutiveFailures >= input.maxConsecutiveFailures) return tooManyFailures(state);
    if (state.step >= input.maxSteps) break;

    state.step += 1;
    const response = await input.session.complete(
      {
        messages: state.messages,
        tools: input.tools.length > 0 ? input.tools : undefined,
        temperature: input.temperature,
        maxOutputTokens: input.maxOutputTokens,
        signal: input.signal,
        ...(input.observer?.text ? { onText: input.observer.text } : {}),
      },
      onFailover,
    );
    if (response.toolCalls.length === 0) {
      const text = (response.text ?? "").trim() || "(no answer)";
      return {
        kind: "reply",
        text,
        stopReason: "completed",
        toolCalls: state.records,
        model: response.model,
      };
    }
    state.messages = [
      ...state.messages,
      { role: "assistant", content: response.text, toolCalls: response.toolCalls },
    ];
    state.pending = [...response.toolCalls];
    state.model = response.model;
  }
  return input.signal.aborted ? outOfTime(state) : outOfSteps(input, state);
}

/** Runs the pending calls in order, unless one pauses the loop (an approval, a deferred call). */
async function runPendingCalls(
  input: ToolLoopInput,
  state: LoopState,
  answered: Answer | null,
): Promise<Paused | null> {
  while (state.pending.length > 0 && !input.signal.aborted) {
    const call = state.pending[0]!;
    const answer = answered?.callId === call.id ? answered : null;
    const paused = pauseAt(input, state, call, answer);
    if (paused) return paused;
    state.pending = state.pending.slice(1);
    await runCall(input, state, call, answer);
  }
  return null;
}

/** A pause at this call: it needs an approval nobody gave yet, or its host is to answer it. */
function pauseAt(
  input: ToolLoopInput,
  state: LoopState,
  call: ToolCall,
  answer: Answer | null,
): Paused | null {
  const approval = answer?.decision;
  const checkpoint = (): ToolLoopCheckpoint => ({
    messages: state.messages,
    turnStart: state.turnStart,
    step: state.step,
    consecutiveFailures: state.consecutiveFailures,
    records: state.records,
    pendingCalls: state.pending,
    model: state.model,
    modelIndex: input.session.position,
    usage: { ...input.session.usage },
  });
  if (approval === undefined && !answer?.output && input.canAskApproval) {
    const args = input.executor.awaitingApproval(call);
    if (args) {
      input.events.emit({
        type: "tool_approval_requested",
        turnId: input.ids.turnId,
        agentId: input.ids.agentId,
        roomId: input.ids.roomId,
        at: input.now(),
        tool: call.name,
      });
      const paused = checkpoint();
      return {
        kind: "paused",
        reason: "approval",
        tool: call.name,
        arguments: args,
        checkpoint: paused,
      };
    }
  }
  // A deferred call (approved, when it needs that) goes to the host, unless it answered it.
  if (input.defer && !answer?.output && (approval === undefined || approval === "approved")) {
    const args = input.executor.deferral(call);
    if (args && input.defer(call.name, args))
      return {
        kind: "paused",
        reason: "deferred",
        tool: call.name,
        arguments: args,
        checkpoint: checkpoint(),
        ...(approval ? { approval } : {}),
      };
  }
  return null;
}

/** Runs one call (or takes the host's output for it) and feeds its result back to the model. */
async function runCall(
  input: ToolLoopInput,
  state: LoopState,
  call: ToolCall,
  answer: Answer | null,
): Promise<void> {
  const approval = answer?.decision;
  input.observer?.toolCall?.({
    id: call.id,
    name: call.name,
    arguments: parsedOrRaw(call.arguments),
  });
  const { ids } = input;
  const { record, modelContent } = answer?.output
    ? input.executor.given(call, answer.output, state.model, approval)
    : await input.executor.execute(
        call,
        {
          agentId: ids.agentId,
          roomId: ids.roomId,
          userId: ids.userId,
          turnId: ids.turnId,
          signal: input.signal,
          model: state.model,
          ...(ids.delegation ? { delegation: ids.delegation } : {}),
          ...(ids.principal ? { principal: ids.principal } : {}),
          ...(ids.place ? { place: ids.place } : {}),
        },
        approval,
      );
  state.records.push(record);
  input.observer?.toolResult?.(record);
  state.messages.push({ role: "tool", toolCallId: call.id, content: modelContent });
  input.events.emit({
    type: "tool_called",
    turnId: ids.turnId,
    agentId: ids.agentId,
    roomId: ids.roomId,
    at: input.now(),
    tool: record.name,
    ok: record.ok,
    cached: record.cached,
    durationMs: record.durationMs,
  });
  state.consecutiveFailures = record.ok ? 0 : state.consecutiveFailures + 1;
}

function tooManyFailures(state: LoopState): ToolLoopResult {
  const failures = state.consecutiveFailures;
  const failed = state.records.slice(-failures).map((r) => r.name);
  return {
    kind: "reply",
    text:
      `I couldn't finish this: ${failures} tool calls failed in a row (${unique(failed).join(", ")}). ` +
      "Please check the request or try again later.",
    stopReason: "max_failures",
    toolCalls: state.records,
    model: null,
  };
}

function outOfTime(state: LoopState): ToolLoopResult {
  return {
    kind: "reply",
    text: TIMEOUT_REPLY,
    stopReason: "timeout",
    toolCalls: state.records,
    model: null,
  };
}

function outOfSteps(input: ToolLoopInput, state: LoopState): ToolLoopResult {
  const used = unique(state.records.map((r) => r.name));
  return {
    kind: "reply",
    text:
      `I stopped after ${input.maxSteps} steps without reaching an answer` +
      (used.length > 0 ? ` (tools used: ${used.join(", ")})` : "") +
      ". Ask me to continue if you want me to keep going.",
    stopReason: "max_steps",
    toolCalls: state.records,
    model: null,
  };
}

/** Tool arguments as a watcher should see them: parsed when they are JSON, else as written. */
function parsedOrRaw(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
