// The compiled task spec: before planning, the small model turns the goal, in a context of its
// own (not the conversation, not the planner's), into a zod-validated definition: the goal, the
// inputs given and missing, constraints, what the output must be, and risks. The planner, the act
// steps and the completion check work from it. A reply that stays invalid after one re-ask falls
// back to the raw goal (recorded, never blocking); a missing input marked required pauses the
// task as `needs_input` with the question until a person answers.
import { z } from "zod";
import { InvalidStructuredReplyError, completeStructured } from "../turn/structured-output.ts";
import type { TaskSpec } from "./task-types.ts";
import type { ChatModel } from "../ports/model.ts";
import type { ModelUsage } from "../ports/tools.ts";

const Text = (max: number) => z.string().trim().min(1).max(max);
const MAX_ITEMS = 10;

export const SpecReply: z.ZodType<TaskSpec> = z.object({
  goal: Text(4_000),
  inputs: z.object({
    provided: z.array(Text(1_000)).max(20),
    missing: z
      .array(z.object({ input: Text(300), question: Text(500), required: z.boolean() }))
      .max(MAX_ITEMS),
  }),
  constraints: z.array(Text(500)).max(MAX_ITEMS),
  outputRequirements: z.array(Text(500)).max(MAX_ITEMS),
  risks: z.array(Text(500)).max(MAX_ITEMS),
});

export const SPEC_INSTRUCTIONS =
  "You define a task for an autonomous agent before any work starts. Restate the goal precisely. List the inputs the request " +
  "provides, and the inputs it lacks, each with the question to ask the person who asked and whether the task cannot proceed " +
  "without it (required: true only when no reasonable default exists and the agent's tools could not find it). List the " +
  "constraints the work must respect, what the output must contain or look like, and the risks. Reply with only JSON: " +
  '{"goal":"...","inputs":{"provided":["..."],"missing":[{"input":"...","question":"...","required":false}]},' +
  '"constraints":["..."],"outputRequirements":["..."],"risks":["..."]}';

export interface CompiledSpec {
  spec: TaskSpec;
  source: "compiled" | "raw_goal";
  /** Why the raw goal is used (the reply's last problem), when it is. */
  problem: string | null;
  usage: ModelUsage;
}

/** The spec of a goal that could not be compiled: the goal as written, nothing else assumed. */
export function rawGoalSpec(goal: string): TaskSpec {
  return {
    goal,
    inputs: { provided: [], missing: [] },
    constraints: [],
    outputRequirements: [],
    risks: [],
  };
}

/**
 * Compiles the goal with the small model. An invalid reply is re-asked once, then the raw goal is
 * used; a model that cannot be reached fails like any other model call (the caller decides).
 */
export async function compileSpec(input: {
  goal: string;
  model: ChatModel;
  modelName: string;
  /** The prompt cache's scope (ChatRequest.cacheScope): the agent, whose spec prompt is shared. */
  cacheScope?: string;
  tools: string;
  signal: AbortSignal;
}): Promise<CompiledSpec> {
  const usage: ModelUsage = { promptTokens: 0, completionTokens: 0, modelCalls: 0 };
  // Counted per call, so a reply that ends up unused is still paid for in the task's usage.
  const counted: ChatModel = {
    backend: input.model.backend,
    async complete(request) {
      const response = await input.model.complete({ cacheScope: input.cacheScope, ...request });
      usage.promptTokens += response.usage.promptTokens;
      usage.completionTokens += response.usage.completionTokens;
      if (response.usage.cachedPromptTokens)
        usage.cachedPromptTokens =
          (usage.cachedPromptTokens ?? 0) + response.usage.cachedPromptTokens;
      usage.modelCalls += 1;
      return response;
    },
  };
  try {
    const reply = await completeStructured({
      model: counted,
      modelName: input.modelName,
      schema: SpecReply,
      signal: input.signal,
      messages: [
        {
          role: "system",
          content: `${SPEC_INSTRUCTIONS}\n\nTools the agent has:\n${input.tools}`,
        },
        { role: "user", content: `Goal: ${input.goal}` },
      ],
    });
    return { spec: reply.value, source: "compiled", problem: null, usage };
  } catch (error) {
    if (!(error instanceof InvalidStructuredReplyError)) throw error;
    return { spec: rawGoalSpec(input.goal), source: "raw_goal", problem: error.problem, usage };
  }
}

/** The required inputs the spec lacks: the task cannot go on until a person gives them. */
export function requiredMissing(spec: TaskSpec): TaskSpec["inputs"]["missing"] {
  return spec.inputs.missing.filter((missing) => missing.required);
}

/** The question a `needs_input` task posts: one line per required input. */
export function questionFor(spec: TaskSpec): string {
  const missing = requiredMissing(spec);
  if (missing.length === 1) return missing[0]!.question;
  return missing.map((item, i) => `${i + 1}. ${item.question}`).join("\n");
}

/** The spec with a person's answer: the inputs it covers move from missing to provided. */
export function withAnswer(spec: TaskSpec, inputs: readonly string[], answer: string): TaskSpec {
  const covered = new Set(inputs);
  return {
    ...spec,
    inputs: {
      provided: [...spec.inputs.provided, `${inputs.join(", ")}: ${answer}`],
      missing: spec.inputs.missing.filter((item) => !covered.has(item.input)),
    },
  };
}

/** The spec as the planner, the act steps and the completion check read it. */
export function renderSpec(spec: TaskSpec): string {
  const list = (title: string, items: readonly string[]) =>
    items.length > 0 ? [`${title}:`, ...items.map((item) => `- ${item}`)] : [];
  const optional = spec.inputs.missing.filter((item) => !item.required);
  return [
    "Task definition:",
    `Goal: ${spec.goal}`,
    ...list("Inputs given", spec.inputs.provided),
    ...list(
      "Inputs not given (assume a reasonable default and say which)",
      optional.map((item) => item.input),
    ),
    ...list("Constraints", spec.constraints),
    ...list("The output must", spec.outputRequirements),
    ...list("Risks", spec.risks),
  ].join("\n");
}
