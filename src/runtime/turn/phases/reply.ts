// Reply: whether to answer (the rules' verdict, or the small model's when they ask it) and what
// the turn ends with: the reply as it will be stored, a pause at a tool needing approval, or an
// unanswered turn (declined, a place's budget used, the model's choice to stay quiet).
import type { Character } from "../../character.ts";
import type { Memory } from "../../ports/memory.ts";
import type { ChatMessage, ChatModel } from "../../ports/model.ts";
import { withDelegatedUsage } from "../delegation.ts";
import { inboundMessageId, replyMessageId } from "../message-ids.ts";
import type { ModelSession } from "../model-session.ts";
import { decideWithModel, type RespondDecision } from "../respond-decision.ts";
import type { PlaceBudgetUsed } from "../spend.ts";
import type { ToolLoopResult } from "../tool-loop.ts";
import { beforeDeadline, TIMEOUT_REPLY, type TimedOut } from "../turn-deadline.ts";
import { modelChoiceFor, type TurnRunnerDeps } from "../turn-deps.ts";
import type { TurnInput, TurnOutcome, TurnPause, UsedMemory } from "../turn-types.ts";

/** How a turn's phases ended, before it is an outcome. */
export type TurnEnd =
  | { kind: "declined" }
  | { kind: "budget_used"; used: PlaceBudgetUsed }
  | { kind: "ignored" }
  | (ToolLoopResult & { memories: UsedMemory[] })
  | TimedOut;

/** The loop's end, with the memories the prompt held. */
export function endWith(result: ToolLoopResult | TimedOut, memories: UsedMemory[]): TurnEnd {
  return result.kind === "timed_out" ? result : { ...result, memories };
}

/** The rules' verdict, or the small model's when the rules leave it to the model. */
export async function decideToRespond(
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  turn: {
    model: ChatModel;
    rules: RespondDecision | "ask";
    history: ChatMessage[];
    signal: AbortSignal;
  },
): Promise<RespondDecision | TimedOut> {
  if (turn.rules !== "ask") return turn.rules;
  const asked = await beforeDeadline(
    turn.signal,
    decideWithModel({
      model: turn.model,
      modelName: modelChoiceFor(character, deps.models).small,
      character,
      history: turn.history,
      text: input.text,
      signal: turn.signal,
      cacheScope: input.agentId,
    }),
  );
  return "decision" in asked ? asked.decision : asked;
}

/** The outcome a caller sees for how the turn ended. */
export function turnOutcome(
  deps: TurnRunnerDeps,
  input: TurnInput,
  session: ModelSession | null,
  end: TurnEnd,
): TurnOutcome | TurnPause {
  switch (end.kind) {
    case "declined":
      return ignoredOutcome(input, null);
    case "budget_used": {
      const outcome = ignoredOutcome(input, null);
      if (end.used.notice) outcome.notice = end.used.notice;
      return outcome;
    }
    case "ignored":
      return ignoredOutcome(input, session);
    case "paused":
      return {
        turnId: input.turnId,
        status: "awaiting_approval",
        tool: end.tool,
        arguments: end.arguments,
        checkpoint: { ...end.checkpoint, memories: end.memories },
      };
    case "reply":
      return replied(deps, input, session, end, end.memories);
    case "timed_out": {
      const timeout = { text: TIMEOUT_REPLY, toolCalls: [], model: null };
      return replied(deps, input, session, { ...timeout, stopReason: "timeout" }, []);
    }
  }
}

function ignoredOutcome(input: TurnInput, session: ModelSession | null): TurnOutcome {
  return {
    turnId: input.turnId,
    status: "ignored",
    reply: null,
    actions: [],
    toolCalls: [],
    usage: session ? { ...session.usage } : { promptTokens: 0, completionTokens: 0, modelCalls: 0 },
    model: null,
    stopReason: "ignored",
    memories: [],
    messageId: inboundMessageId(input.turnId),
    replyId: null,
    replyMemory: null,
  };
}

function replied(
  deps: TurnRunnerDeps,
  input: TurnInput,
  session: ModelSession | null,
  result: Pick<TurnOutcome, "stopReason" | "toolCalls" | "model"> & { text: string },
  memories: UsedMemory[],
): TurnOutcome {
  const actions = [
    "REPLY",
    ...new Set(result.toolCalls.filter((call) => call.ok).map((call) => call.name)),
  ];
  const spent = session?.usage ?? { promptTokens: 0, completionTokens: 0, modelCalls: 0 };
  const usage = withDelegatedUsage(spent, result.toolCalls);
  const reply: Memory = {
    id: replyMessageId(input.turnId),
    type: "message",
    agentId: input.agentId,
    roomId: input.roomId,
    userId: input.userId,
    content: {
      text: result.text,
      role: "agent",
      source: input.source,
      actions,
      inReplyTo: inboundMessageId(input.turnId),
    },
    metadata: {
      turnId: input.turnId,
      tokens: deps.tokens.count(result.text),
      model: result.model,
      stopReason: result.stopReason,
      usage,
      toolCalls: result.toolCalls.map((call) => ({
        name: call.name,
        ok: call.ok,
        cached: call.cached,
      })),
      // Which memories informed the reply (their text stays in the memories themselves).
      memories: memories.map(({ id, type, score }) => ({ id, type, score })),
    },
    createdAt: deps.clock.now(),
  };
  return {
    turnId: input.turnId,
    status: "replied",
    reply: { text: result.text },
    actions,
    toolCalls: result.toolCalls,
    usage,
    model: result.model,
    stopReason: result.stopReason,
    memories,
    messageId: inboundMessageId(input.turnId),
    replyId: reply.id,
    replyMemory: reply,
  };
}
