// The instant in-process model for the ElizaOS driver: registered as ElizaOS's TEXT_SMALL,
// TEXT_LARGE and TEXT_EMBEDDING handlers. It answers each prompt in the format the prompt asks for,
// as a real model would (so ElizaOS never re-asks): the reply XML for the message handler, the
// reflection XML for the reflection evaluator. A prompt it does not know fails the run.
import { type GenerateTextParams, type IAgentRuntime, ModelType, type Plugin } from "@elizaos/core";

let text = 0;
let embedding = 0;
const kinds = new Map<string, number>();

/** Calls so far: text generations (both sizes) and embeddings. */
export function modelCalls(): { text: number; embedding: number; kinds: Record<string, number> } {
  return { text, embedding, kinds: Object.fromEntries(kinds) };
}

function answer(_runtime: IAgentRuntime, params: GenerateTextParams): Promise<string> {
  text += 1;
  const prompt = params.prompt;
  if (prompt.includes("<task>Generate dialog and actions for the character")) {
    kinds.set("reply", (kinds.get("reply") ?? 0) + 1);
    return Promise.resolve(
      "<response><thought>A greeting is enough.</thought><actions>REPLY</actions><providers></providers><text>Hello!</text></response>",
    );
  }
  if (prompt.startsWith("# Task: Generate Agent Reflection")) {
    kinds.set("reflection", (kinds.get("reflection") ?? 0) + 1);
    // Numbered test messages hold nothing new: a fact already known, the DM as the relationship.
    return Promise.resolve(
      "<response><thought>I answered each message.</thought><facts><fact><claim>The user sends numbered messages.</claim><type>fact</type><in_bio>false</in_bio><already_known>true</already_known></fact></facts><relationships><relationship><sourceEntityId>user</sourceEntityId><targetEntityId>agent</targetEntityId><tags>dm_interaction</tags></relationship></relationships></response>",
    );
  }
  throw new Error(`the instant model does not know this prompt: ${prompt.slice(0, 120)}`);
}

/** A 384-dimension vector (a size plugin-sql stores) from the text's characters: cheap, stable. */
function embed(_runtime: IAgentRuntime, params: unknown): Promise<number[]> {
  embedding += 1;
  const input =
    typeof params === "string"
      ? params
      : typeof params === "object" && params !== null && "text" in params
        ? String(params.text)
        : "";
  const vector = new Array<number>(384).fill(0);
  for (let i = 0; i < input.length; i++) vector[i % 384]! += input.charCodeAt(i) / 1000;
  vector[0]! += 1;
  return Promise.resolve(vector);
}

export const instantModelPlugin: Plugin = {
  name: "instant-model",
  description: "Answers at once, in the format each prompt asks for.",
  priority: 100,
  models: {
    [ModelType.TEXT_SMALL]: answer,
    [ModelType.TEXT_LARGE]: answer,
    [ModelType.TEXT_EMBEDDING]: embed,
  },
};
