// Model and tools: the tools a place allows, offered to the model, and the loop that asks the
// model and runs the tools it calls until it answers in text, pauses for an approval or a bound
// ends it (turn/tool-loop.ts). The turn's deadline ends it as a result, TIMED_OUT, never as a throw.
import type { Character } from "../../character.ts";
import { placeAllowsTool } from "../../access/place-policy.ts";
import type { EventSink } from "../../ports/events.ts";
import type { ChatMessage } from "../../ports/model.ts";
import type { ToolDefinition } from "../../ports/tools.ts";
import type { ModelSession } from "../model-session.ts";
import { ToolExecutor } from "../tool-executor.ts";
import { runToolLoop, type ToolLoopInput, type ToolLoopResult } from "../tool-loop.ts";
import { beforeDeadline, TIMED_OUT, type TimedOut } from "../turn-deadline.ts";
import type { TurnRunnerDeps } from "../turn-deps.ts";
import type { RespondOptions, TurnInput } from "../turn-types.ts";

export interface ModelAndTools {
  /** The tools offered, as the context's tool section lists them. */
  tools: ToolDefinition[];
  /** The loop from the prompt's messages, or from the checkpoint of a paused turn. */
  run(
    from: { messages: ChatMessage[] } | { resume: RespondOptions["resume"] & {} },
  ): Promise<ToolLoopResult | TimedOut>;
}

export async function modelAndTools(
  deps: TurnRunnerDeps,
  character: Character,
  input: TurnInput,
  turn: { session: ModelSession; events: EventSink; signal: AbortSignal; options: RespondOptions },
): Promise<ModelAndTools> {
  const { session, signal, options } = turn;
  const executor = new ToolExecutor({
    host: deps.tools,
    // A place's settings (a server's allowed tools, role-gated ones) narrow what is offered.
    tools: (await deps.tools.list()).filter((tool) => placeAllowsTool(input.place, tool.name)),
    approvalRequired: character.settings.toolApproval,
    defaultTimeoutMs: deps.limits.toolTimeoutMs,
    maxResultChars: deps.limits.maxToolResultChars,
    now: () => deps.clock.now(),
    remembered: options.toolOutputs?.remembered,
    onOutput: options.toolOutputs?.record,
  });
  const loop: Omit<ToolLoopInput, "messages" | "turnStart"> = {
    session,
    executor,
    events: turn.events,
    now: () => deps.clock.now(),
    ids: {
      turnId: input.turnId,
      agentId: input.agentId,
      roomId: input.roomId,
      userId: input.userId,
      ...(input.delegation ? { delegation: input.delegation } : {}),
      ...(input.principal ? { principal: input.principal } : {}),
      ...(input.place ? { place: input.place } : {}),
    },
    tools: executor.tools.map(({ name, description, parameters }) => ({
      name,
      description,
      parameters,
    })),
    temperature: character.settings.temperature,
    maxOutputTokens: character.settings.maxOutputTokens,
    maxSteps: character.settings.maxSteps ?? deps.limits.maxSteps,
    maxConsecutiveFailures:
      character.settings.maxConsecutiveFailures ?? deps.limits.maxConsecutiveFailures,
    signal,
    canAskApproval: options.canAskApproval === true,
    observer: options.observer,
  };
  return {
    tools: executor.tools,
    async run(from) {
      const request =
        "resume" in from
          ? { ...loop, messages: [], turnStart: 0, resume: from.resume }
          : { ...loop, messages: from.messages, turnStart: from.messages.length - 1 };
      const result = await beforeDeadline(signal, runToolLoop(request));
      // The loop's own "out of time" answer is a task step's; a turn answers a timeout itself.
      return signal.aborted ? TIMED_OUT : result;
    },
  };
}
