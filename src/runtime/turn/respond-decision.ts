// Whether the agent answers a message. REST calls, other agents' requests (ask_agent), DMs and
// mentions are always answered (unless the place says "never" or its filter declined the message);
// other messages follow the place's respond policy, else the character's `settings.respond`. Only
// mode "llm" spends a model call (on SMALL_MODEL), so a busy channel does not cost a completion
// per message.
import type { Character } from "../character.ts";
import type { TurnInput } from "./turn-types.ts";
import type { ChatMessage, ChatModel, ChatResponse } from "../ports/model.ts";

export type RespondDecision =
  | { respond: true; reason: string }
  | { respond: false; reason: string };

/** The rule-based part: "ask" means the character wants the small model to decide. */
export function decideByRules(input: TurnInput, character: Character): RespondDecision | "ask" {
  if (input.source === "rest") return { respond: true, reason: "rest" };
  // Another agent asked (ask_agent): it waits for exactly one answer.
  if (input.source === "agent") return { respond: true, reason: "agent" };
  // The place's filter declined the message before the model (access/message-filter.ts): it is
  // stored, never answered, whoever wrote it and however it was addressed.
  if (input.place?.filtered) return { respond: false, reason: "filtered" };
  if (input.fromBot && !character.settings.respond.replyToBots)
    return { respond: false, reason: "from_bot" };
  if (input.isDirect) return { respond: true, reason: "direct_message" };
  // A place set to "never" (a server's or channel's settings) keeps the agent quiet there.
  if (input.place?.respond === "never") return { respond: false, reason: "place_never" };
  if (input.mentioned || mentionsByName(input.text, character))
    return { respond: true, reason: "mentioned" };
  switch (input.place?.respond ?? character.settings.respond.mode) {
    case "always":
      return { respond: true, reason: "mode_always" };
    case "llm":
      return "ask";
    case "mentions":
      return { respond: false, reason: "not_mentioned" };
    case "never":
      return { respond: false, reason: "mode_never" };
  }
}

function mentionsByName(text: string, character: Character): boolean {
  const words = [character.name, character.username, ...character.settings.respond.keywords]
    .filter((word): word is string => typeof word === "string" && word.trim().length > 0)
    .map((word) => word.trim().toLowerCase());
  const lower = text.toLowerCase();
  return words.some((word) =>
    new RegExp(`(^|[^\\p{L}\\p{N}])${escapeRegExp(word)}($|[^\\p{L}\\p{N}])`, "u").test(lower),
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Asks the small model; anything but a clear RESPOND counts as "stay quiet". */
export async function decideWithModel(input: {
  model: ChatModel;
  modelName: string;
  character: Character;
  history: ChatMessage[];
  text: string;
  signal: AbortSignal;
  /** The prompt cache's scope (ChatRequest.cacheScope): the agent, for the small model's calls. */
  cacheScope?: string;
}): Promise<{ decision: RespondDecision; response: ChatResponse }> {
  const recent = input.history
    .slice(-10)
    .map(
      (message) =>
        `${message.role === "assistant" ? input.character.name : "User"}: ${"content" in message ? message.content : ""}`,
    )
    .join("\n");
  const response = await input.model.complete({
    model: input.modelName,
    signal: input.signal,
    cacheScope: input.cacheScope,
    maxOutputTokens: 5,
    temperature: 0,
    messages: [
      {
        role: "system",
        content:
          `You decide whether ${input.character.name} should reply to the last message in a group chat. ` +
          `Reply RESPOND if it is addressed to ${input.character.name} or clearly invites their input, ` +
          "IGNORE if it is not, STOP if the people asked them to stop. Answer with one word.",
      },
      { role: "user", content: `${recent}\nLast message: ${input.text}` },
    ],
  });
  const word = (response.text ?? "").trim().toUpperCase();
  const decision: RespondDecision = word.startsWith("RESPOND")
    ? { respond: true, reason: "model_respond" }
    : { respond: false, reason: word.startsWith("STOP") ? "model_stop" : "model_ignore" };
  return { decision, response };
}
