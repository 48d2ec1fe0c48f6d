// What a turn runs with: the ports and limits createTurnRunner takes, shared by its phases
// (turn/phases/), and the models a character picks from the deployment's defaults.
import type { Character } from "../character.ts";
import type { Evaluator } from "../after-reply/evaluators.ts";
import type { Provider } from "../context/compose-state.ts";
import type { Clock, EventSink } from "../ports/events.ts";
import type { MemoryStore } from "../ports/memory.ts";
import type { ChatModel, ModelChoice } from "../ports/model.ts";
import type { MemoryRetriever } from "../ports/retrieval.ts";
import type { ToolHost } from "../ports/tools.ts";
import type { TokenCounter } from "../util/tokens.ts";
import type { ObservedModelCall } from "./model-session.ts";
import type { SpendLedger } from "./spend.ts";
import type { TurnInspectionSink } from "./turn-inspection.ts";
import type { RuntimeLimits } from "./turn-types.ts";

export interface TurnRunnerDeps {
  /** null when no model backend is configured: turns then fail with `model_not_configured`. */
  model: ChatModel | null;
  /** Told each model call's content (a tracer recording it); absent: nobody is. */
  observeModel?: (call: ObservedModelCall) => void;
  modelNotConfiguredMessage: string;
  /** Deployment defaults; a character's settings override them. */
  models: ModelChoice;
  memory: MemoryStore;
  tools: ToolHost;
  providers: Provider[];
  evaluators: Evaluator[];
  clock: Clock;
  events: EventSink;
  tokens: TokenCounter;
  limits: RuntimeLimits;
  /** Long-term memory; null runs turns with the room's recent history only. */
  retriever?: MemoryRetriever | null;
  /** The store afterReply writes and evaluators read through, when it differs from `memory`. */
  afterReplyMemory?: MemoryStore;
  /** Where model spend is counted; without it there is no daily ceiling. */
  spend?: SpendLedger;
  /** Tokens an agent may spend per UTC day unless its character says otherwise; null: none. */
  dailyTokenLimit?: number | null;
  /** Where replied turns are kept for the turn inspector; absent: they are not. */
  inspections?: TurnInspectionSink;
}

/** The ids a turn's events carry. */
export interface TurnIds {
  turnId: string;
  agentId: string;
  roomId: string;
}

export function modelChoiceFor(character: Character, defaults: ModelChoice): ModelChoice {
  return {
    primary: character.settings.model ?? defaults.primary,
    fallbacks: character.settings.modelFallbacks ?? defaults.fallbacks,
    small: character.settings.smallModel ?? defaults.small,
  };
}
