// The model <-> tools loop of one turn: ask the model, run the tools it calls, feed the results
// back, until it answers in text or a bound is hit (maxSteps model rounds, maxConsecutiveFailures
// failed tool calls in a row, or the turn's deadline). A bound ends with a clear final message.
import { ModelSession, transcriptForFallback } from "./model-session.ts";
import type { ToolExecutor } from "./tool-executor.ts";
import type { StopReason, ToolCallRecord } from "./turn-types.ts";
import type { ChatMessage, EventSink, ToolSpec } from "./types.ts";

export interface ToolLoopInput {
  session: ModelSession;
  executor: ToolExecutor;
  events: EventSink;
  now: () => number;
  ids: { turnId: string; agentId: string; roomId: string; userId: string };
  messages: ChatMessage[];
  /** Index in `messages` where this turn's own messages begin (for failover). */
  turnStart: number;
  tools: ToolSpec[];
  temperature?: number;
  maxOutputTokens?: number;
  maxSteps: number;
  maxConsecutiveFailures: number;
  signal: AbortSignal;
}

export interface ToolLoopResult {
  text: string;
  stopReason: StopReason;
  toolCalls: ToolCallRecord[];
  /** The model that wrote the final text; null when a bound ended the turn before any answer. */
  model: string | null;
}

export async function runToolLoop(input: ToolLoopInput): Promise<ToolLoopResult> {
  let messages = input.messages;
  const records: ToolCallRecord[] = [];
  let consecutiveFailures = 0;

  const onFailover = (): ChatMessage[] => {
    input.executor.clearCache();
    messages = transcriptForFallback(messages, input.turnStart);
    return messages;
  };

  for (let step = 0; step < input.maxSteps; step++) {
    const response = await input.session.complete(
      {
        messages,
        tools: input.tools.length > 0 ? input.tools : undefined,
        temperature: input.temperature,
        maxOutputTokens: input.maxOutputTokens,
        signal: input.signal,
      },
      onFailover,
    );
    if (response.toolCalls.length === 0) {
      const text = (response.text ?? "").trim();
      return { text: text || "(no answer)", stopReason: "completed", toolCalls: records, model: response.model };
    }

    messages = [...messages, { role: "assistant", content: response.text, toolCalls: response.toolCalls }];
    for (const call of response.toolCalls) {
      const { record, modelContent } = await input.executor.execute(call, {
        agentId: input.ids.agentId,
        roomId: input.ids.roomId,
        userId: input.ids.userId,
        turnId: input.ids.turnId,
        signal: input.signal,
        model: response.model,
      });
      records.push(record);
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
      if (input.signal.aborted) break;
    }
    if (input.signal.aborted) break;
    if (consecutiveFailures >= input.maxConsecutiveFailures) {
      const failed = records.slice(-consecutiveFailures).map((r) => r.name);
      return {
        text:
          `I couldn't finish this: ${consecutiveFailures} tool calls failed in a row (${unique(failed).join(", ")}). ` +
          "Please check the request or try again later.",
        stopReason: "max_failures",
        toolCalls: records,
        model: null,
      };
    }
  }

  if (input.signal.aborted) {
    return { text: "I ran out of time on this one before I could finish. Please try again.", stopReason: "timeout", toolCalls: records, model: null };
  }
  const used = unique(records.map((r) => r.name));
  return {
    text:
      `I stopped after ${input.maxSteps} steps without reaching an answer` +
      (used.length > 0 ? ` (tools used: ${used.join(", ")})` : "") +
      ". Ask me to continue if you want me to keep going.",
    stopReason: "max_steps",
    toolCalls: records,
    model: null,
  };
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
