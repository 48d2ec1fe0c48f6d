// The platform side of ask_agent (src/runtime/turn/delegation.ts): one journalled turn in the other
// agent's room for the asking conversation (`agent:<caller>:<hash>`, also its user), acting for
// the asking conversation's principal, through the room's own submitTurn, so the turn is
// journalled, answered exactly once and kept in both agents' histories. The
// idempotency key comes from the caller's turn and call: a repeat (a retried RPC after the other
// room was evicted, or the caller's turn replayed after its own eviction) gets the first answer.
import type { Env } from "../../env.ts";
import type { AgentAnswer, AgentAsker, AgentQuestion } from "../../runtime/turn/delegation.ts";
import { delegatedPrincipal, delegatedRoomOf } from "../../runtime/turn/delegation.ts";
import { inheritedPlace, type PlacePolicy } from "../../runtime/access/place-policy.ts";
import { sha256Hex } from "../../runtime/util/hashing.ts";
import type { ModelUsage } from "../../runtime/ports/tools.ts";
import type { TurnUsage } from "../../runtime/turn/turn-types.ts";
import { errorField, log } from "../../log.ts";
import { submitTurn } from "./room-client.ts";
import { stores } from "../../db/stores/index.ts";
import { utcDay } from "../../runtime/turn/spend.ts";
import type { TurnResult } from "./room-types.ts";

/** RPC attempts per question: a room reset mid-turn (eviction, deploy) is asked again. */
const ATTEMPTS = 4;
const RETRY_BASE_MS = 250;

export function createAgentAsker(env: Env): AgentAsker {
  return {
    async ask(question) {
      const roomId = await delegatedRoomOf(question.caller, question.origin);
      const request = {
        input: {
          turnId: crypto.randomUUID(),
          agentId: question.callee,
          roomId,
          userId: roomId,
          userName: question.callerName,
          text: question.message,
          attachments: [],
          source: "agent",
          isDirect: true,
          mentioned: true,
          fromBot: true,
          receivedAt: Date.now(),
          delegation: { chain: question.chain },
          principal: delegatedPrincipal(question.caller, question.origin.principal),
          ...placeOf(question.origin.place),
        },
        idempotencyKey: question.idempotencyKey,
        fingerprint: await sha256Hex(`${question.callee}\u0000${question.message}`),
      };
      let result: TurnResult | null = null;
      for (let attempt = 1; attempt <= ATTEMPTS && !result; attempt++) {
        try {
          result = await submitTurn(env, request);
        } catch (error) {
          // The other room went away mid-turn; its journal resumes the turn on the next contact,
          // and the same key finds it there.
          log.warn("ask_agent_retry", {
            caller: question.caller,
            callee: question.callee,
            attempt,
            error: errorField(error),
          });
          if (question.signal.aborted || attempt === ATTEMPTS) break;
          await new Promise((resolve) => setTimeout(resolve, RETRY_BASE_MS * 2 ** (attempt - 1)));
        }
      }
      const answer = answerOf(question, result);
      // The callee counted these tokens against its own ceiling; they count against the
      // caller's too, so asking another agent never spends past the caller's budget. A replayed
      // answer (the same call asked again) was counted the first time.
      if (result && !result.replayed && "usage" in answer && answer.usage)
        await chargeCaller(env, question.caller, answer.usage);
      return answer;
    },
  };
}

/** Counting never fails the call: a lost count only makes the ceiling more lenient (and is logged). */
async function chargeCaller(env: Env, caller: string, usage: ModelUsage): Promise<void> {
  const tokens = usage.promptTokens + usage.completionTokens;
  if (tokens <= 0) return;
  try {
    await stores(env).spend.add(caller, utcDay(Date.now()), tokens);
  } catch (error) {
    log.warn("delegated_spend_not_recorded", { caller, tokens, error: errorField(error) });
  }
}

function answerOf(question: AgentQuestion, result: TurnResult | null): AgentAnswer {
  if (!result) return { ok: false, error: `agent "${question.callee}" could not be reached` };
  if (!result.ok) {
    return {
      ok: false,
      error: `agent "${question.callee}" could not answer (${result.error.code}): ${result.error.message}`,
    };
  }
  const { outcome } = result;
  return { ok: true, text: outcome.reply?.text ?? "(no answer)", usage: totalUsage(outcome.usage) };
}

/** The callee's own use plus what it asked others in turn: the whole cost of the answer. */
function totalUsage(usage: TurnUsage): ModelUsage {
  const delegated = usage.delegated;
  return {
    promptTokens: usage.promptTokens + (delegated?.promptTokens ?? 0),
    completionTokens: usage.completionTokens + (delegated?.completionTokens ?? 0),
    modelCalls: usage.modelCalls + (delegated?.modelCalls ?? 0),
  };
}

/** The asking conversation's tools and budgets, carried into the callee's turn. */
function placeOf(place: PlacePolicy | undefined): { place: PlacePolicy } | Record<string, never> {
  const inherited = inheritedPlace(place);
  return inherited ? { place: inherited } : {};
}
