// The model <-> tools loop of one turn: ask the model, run the tools it calls, feed the results
// back, until it answers in text or a bound is hit (maxSteps model rounds, maxConsecutiveFailures
// failed tool calls in a row, or the turn's deadline). A bound ends with a clear final message.
// A call to a tool that needs a person's approval pauses the loop when the surface can ask: the
// loop returns a checkpoint (plain data) and is later resumed from it with the person's decision.
// A deferred tool (delegate_task in a task step) pauses it the same way, and is resumed with the
// output its host got for it (the other agent's task result).
import { type ModelSession, transcriptForFallback } from "./model-session.ts";
import type { ToolExecutor } from "./tool-executor.ts";
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

export async function runToolLoop(input: ToolLoopInput): Promise<ToolLoopResult> {
  const from = input.resume?.checkpoint;
  let messages = from ? [...from.messages] : input.messages;
  const turnStart = from?.turnStart ?? input.turnStart;
  const records: ToolCallRecord[] = from ? [...from.records] : [];
  let consecutiveFailures = from?.consecutiveFailures ?? 0;
  let step = from?.step ?? 0;
  // Calls of the latest model response still to run; the decision applies to the first of them.
  let pending: ToolCall[] = from ? [...from.pendingCalls] : [];
  let model = from?.model ?? "";
  const decided =
    input.resume && pending[0]
      ? { callId: pending[0].id, decision: input.resume.decision, output: input.resume.output }
      : null;

  const onFailover = (): ChatMessage[] => {
    input.executor.clearCache();
    messages = transcriptForFallback(messages, turnStart);
    return messages;
  };

  for (;;) {
    while (pending.length > 0 && !input.signal.aborted) {
      const call = pending[0]!;
      const answer = decided?.callId === call.id ? decided : null;
      const approval = answer?.decision;
      const checkpoint = (): ToolLoopCheckpoint => ({
        messages,
        turnStart,
        step,
        consecutiveFailures,
        records,
        pendingCalls: pending,
        model,
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
      pending = pending.slice(1);
      input.observer?.toolCall?.({
        id: call.id,
        name: call.name,
        arguments: parsedOrRaw(call.arguments),
      });
      const { record, modelContent } = answer?.output
        ? input.executor.given(call, answer.output, model, approval)
        : await input.executor.execute(
            call,
            {
              agentId: input.ids.agentId,
              roomId: input.ids.roomId,
              userId: input.ids.userId,
              turnId: input.ids.turnId,
              signal: input.signal,
              model,
              ...(input.ids.delegation ? { delegation: input.ids.delegation } : {}),
              ...(input.ids.principal ? { principal: input.ids.principal } : {}),
              ...(input.ids.place ? { place: input.ids.place } : {}),
            },
            approval,
          );
      records.push(record);
      input.observer?.toolResult?.(record);
      messages.push({ role: "tool", toolCallId: call.id, content: modelContent });
      input.events.emit({
        type: "tool_called",
        turnId: input.ids.turnId,
        agentId: input.ids.agentId,
        roomId: input.ids.roomId,
        at: input.now(),
        tool: record.name,
        ok: record.ok,
        cached: record.cached,
        durationMs: record.durationMs,
      });
      consecutiveFailures = record.ok ? 0 : consecutiveFailures + 1;
    }
    if (input.signal.aborted) break;
    if (consecutiveFailures >= input.maxConsecutiveFailures) {
      const failed = records.slice(-consecutiveFailures).map((r) => r.name);
      return {
        kind: "reply",
        text:
          `I couldn't finish this: ${consecutiveFailures} tool calls failed in a row (${unique(failed).join(", ")}). ` +
          "Please check the request or try again later.",
        stopReason: "max_failures",
        toolCalls: records,
        model: null,
      };
    }
    if (step >= input.maxSteps) break;

    step += 1;
    const response = await input.session.complete(
      {
        messages,
        tools: input.tools.length > 0 ? input.tools : undefined,
        temperature: input.temperature,
        maxOutputTokens: input.maxOutputTokens,
        signal: input.signal,
        ...(input.observer?.text ? { onText: input.observer.text } : {}),
      },
      onFailover,
    );
    if (response.toolCalls.length === 0) {
      const text = (response.text ?? "").trim();
      return {
        kind: "reply",
        text: text || "(no answer)",
        stopReason: "completed",
        toolCalls: records,
        model: response.model,
      };
    }
    messages = [
      ...messages,
      { role: "assistant", content: response.text, toolCalls: response.toolCalls },
    ];
    pending = [...response.toolCalls];
    model = response.model;
  }

  if (input.signal.aborted) {
    return {
      kind: "reply",
      text: "I ran out of time on this one before I could finish. Please try again.",
      stopReason: "timeout",
      toolCalls: records,
      model: null,
    };
  }
  const used = unique(records.map((r) => r.name));
  return {
    kind: "reply",
    text:
      `I stopped after ${input.maxSteps} steps without reaching an answer` +
      (used.length > 0 ? ` (tools used: ${used.join(", ")})` : "") +
      ". Ask me to continue if you want me to keep going.",
    stopReason: "max_steps",
    toolCalls: records,
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
