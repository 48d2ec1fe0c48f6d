// Agent-to-agent delegation, platform-free: who may ask whom (the caller's `settings.delegates`),
// how deep a chain may go and that it never loops back, and the two tools: `ask_agent` (one chat
// turn in the other agent's room for this conversation, reached through an injected AgentAsker,
// since the room-to-room call is the platform's: src/objects/conversation/agent-calls.ts) and `delegate_task` (a
// task step hands the call to its host, which starts a task on the other agent and answers later).
// The callee acts for the caller's principal (src/runtime/access/): a delegation never widens it,
// and its room derives from the asking conversation, so no two conversations meet in it.
import type { AgentPrincipal, Principal } from "../access/principal.ts";
import type { PlacePolicy } from "../access/place-policy.ts";
import type { Character } from "../character.ts";
import { sha256Hex } from "../util/hashing.ts";
import { quoteData, TOOL_RESULT_PREAMBLE } from "../context/quoted-data.ts";
import type { ToolCallRecord, TurnUsage } from "./turn-types.ts";
import type { ModelUsage, ToolDefinition, ToolHost } from "../ports/tools.ts";

/** Hops in one chain of delegations, counted from the first asker: A -> B -> C -> D is the deepest. */
export const MAX_DELEGATION_DEPTH = 3;
/** How long an ask_agent call waits for the other agent's answer. */
export const ASK_AGENT_TIMEOUT_MS = 60_000;
export const MAX_ASK_CHARS = 4_000;
/** Rooms and users of agent-to-agent turns: `agent:<caller id>:…` (a namespace REST cannot use). */
export const AGENT_NAMESPACE = "agent:";
/** Hex digits of the conversation's hash in a delegated room id (64 bits: no collisions in practice). */
const CONVERSATION_HASH_CHARS = 16;

/** The conversation that asked: its room and person, whose principal the callee acts for. */
export interface AskingConversation {
  roomId: string;
  userId: string;
  principal: Principal;
  /** The asking conversation's place: its tools and budgets hold in the callee's turn too. */
  place?: PlacePolicy;
}

/**
 * The callee's room (and user) for one asking conversation: `agent:<caller>:<hash of the caller's
 * room and user>`. Two users or two rooms of the caller never share the callee's history or its
 * facts about "the caller"; the same conversation always comes back to the same room.
 */
export async function delegatedRoomOf(
  caller: string,
  origin: Pick<AskingConversation, "roomId" | "userId">,
): Promise<string> {
  const hash = await sha256Hex(`${origin.roomId}\u0000${origin.userId}`);
  return `${AGENT_NAMESPACE}${caller}:${hash.slice(0, CONVERSATION_HASH_CHARS)}`;
}

/** Whom the callee acts for: the caller agent, for the principal of the asking conversation. */
export function delegatedPrincipal(caller: string, origin: Principal): AgentPrincipal {
  return { kind: "agent", agentId: caller, for: origin };
}

export function delegatesOf(character: Character): string[] {
  return character.settings.delegates ?? [];
}

/**
 * Why `caller` (asked through `chain`) may not hand work to `target`, or null when it may: only
 * agents it lists, never an agent already in the chain (a cycle), never deeper than the bound.
 */
export function delegationRefusal(input: {
  caller: string;
  delegates: readonly string[];
  chain: readonly string[];
  target: string;
}): string | null {
  const { caller, delegates, chain, target } = input;
  if (!delegates.includes(target)) {
    return `you may not ask agent "${target}": the agents you may ask are ${delegates.map((id) => `"${id}"`).join(", ") || "none"}`;
  }
  const path = [...chain, caller];
  if (path.includes(target)) {
    return `asking agent "${target}" would loop back (${[...path, target].join(" -> ")}); a delegation never returns to an agent already in its chain, so answer with what you have`;
  }
  if (path.length > MAX_DELEGATION_DEPTH) {
    return `the delegation depth limit of ${MAX_DELEGATION_DEPTH} is reached (${path.join(" -> ")}); you cannot ask another agent from here, so answer with what you have`;
  }
  return null;
}

export interface AgentQuestion {
  caller: string;
  callerName: string;
  callee: string;
  message: string;
  /** The chain the callee's turn carries: the agents that asked before, then the caller. */
  chain: string[];
  /** Derived from the caller's turn and call: a repeat of the call gets the first answer. */
  idempotencyKey: string;
  signal: AbortSignal;
  /** The caller's conversation: the callee's room derives from it, and it acts for its principal. */
  origin: AskingConversation;
}

export type AgentAnswer =
  | { ok: true; text: string; usage: ModelUsage }
  | { ok: false; error: string; usage?: ModelUsage };

/** The platform's way to run a turn in another agent's room and wait for its answer. */
export interface AgentAsker {
  ask(question: AgentQuestion): Promise<AgentAnswer>;
}

function targetParameter(delegates: readonly string[]) {
  return { type: "string", enum: [...delegates], description: "The id of the agent to ask." };
}

export function askAgentTool(delegates: readonly string[]): ToolDefinition {
  return {
    name: "ask_agent",
    description: `Ask another agent for help and get its answer. Agents you can ask: ${delegates.join(", ")}.`,
    parameters: {
      type: "object",
      properties: {
        agentId: targetParameter(delegates),
        message: {
          type: "string",
          minLength: 1,
          maxLength: MAX_ASK_CHARS,
          description:
            "What you ask, with everything it needs to answer (it cannot see this conversation).",
        },
      },
      required: ["agentId", "message"],
      additionalProperties: false,
    },
    source: "builtin",
    timeoutMs: ASK_AGENT_TIMEOUT_MS,
  };
}

export function delegateTaskTool(delegates: readonly string[]): ToolDefinition {
  return {
    name: "delegate_task",
    description: `Hand a whole piece of work to another agent as its own task and wait for its result. Agents you can delegate to: ${delegates.join(", ")}.`,
    parameters: {
      type: "object",
      properties: {
        agentId: targetParameter(delegates),
        goal: {
          type: "string",
          minLength: 1,
          maxLength: MAX_ASK_CHARS,
          description: "The goal of the task, with everything it needs (it cannot see your task).",
        },
      },
      required: ["agentId", "goal"],
      additionalProperties: false,
    },
    source: "builtin",
    deferred: true,
  };
}

/** The ask_agent tool of one agent; `configure` sets whose settings apply before a turn runs. */
export interface DelegationToolHost extends ToolHost {
  configure(character: Character): void;
}

export function createDelegationToolHost(options: {
  caller: string;
  asker: AgentAsker;
}): DelegationToolHost {
  let delegates: string[] = [];
  let callerName = options.caller;
  return {
    configure(character) {
      delegates = delegatesOf(character);
      callerName = character.name;
    },
    // An agent without delegates does not see the tool at all.
    async list() {
      return delegates.length > 0 ? [askAgentTool(delegates)] : [];
    },
    async call(name, args, ctx) {
      if (name !== "ask_agent") return { ok: false, error: `no tool named ${name}` };
      const target = String(args.agentId);
      const chain = ctx.delegation?.chain ?? [];
      const refusal = delegationRefusal({ caller: options.caller, delegates, chain, target });
      if (refusal) return { ok: false, error: refusal };
      // A turn journalled before principals were kept acts for nobody: it cannot reach further.
      if (!ctx.principal)
        return { ok: false, error: "this turn cannot ask other agents (it has no known asker)" };
      const answer = await options.asker.ask({
        caller: options.caller,
        callerName,
        callee: target,
        message: String(args.message),
        chain: [...chain, options.caller],
        idempotencyKey: `ask:${ctx.callId}`,
        signal: ctx.signal,
        origin: {
          roomId: ctx.roomId,
          userId: ctx.userId,
          principal: ctx.principal,
          ...(ctx.place ? { place: ctx.place } : {}),
        },
      });
      if (!answer.ok)
        return { ok: false, error: answer.error, ...(answer.usage ? { usage: answer.usage } : {}) };
      return {
        ok: true,
        // Another agent's words: data for this agent, not instructions.
        content: quoteData(
          `Answer from agent ${target}`,
          [{ source: `agent ${target}`, text: answer.text }],
          TOOL_RESULT_PREAMBLE,
        ),
        usage: answer.usage,
      };
    },
  };
}

export function addUsage(into: ModelUsage | undefined, more: ModelUsage): ModelUsage {
  return {
    promptTokens: (into?.promptTokens ?? 0) + more.promptTokens,
    completionTokens: (into?.completionTokens ?? 0) + more.completionTokens,
    modelCalls: (into?.modelCalls ?? 0) + more.modelCalls,
  };
}

/** A turn's own usage plus what other agents spent answering its calls (absent when none did). */
export function withDelegatedUsage(own: TurnUsage, calls: readonly ToolCallRecord[]): TurnUsage {
  let delegated = own.delegated;
  for (const call of calls) if (call.usage) delegated = addUsage(delegated, call.usage);
  return delegated ? { ...own, delegated } : { ...own };
}
