// A `needs_input` task's question on Discord: the message with an Answer button, the modal the
// button opens (interaction response type 9, one paragraph text input), and the custom ids that
// route the click (`tin:`) and the modal's submission (`tinm:`) back to the agent's AgentTasks
// object, which checks that the person answering is the one who started the task.
import { INPUT_WINDOW_MS } from "../../runtime/tasks/task-types.ts";
import type { DiscordMessageBody } from "./rest.ts";
import { ResponseType } from "./interaction.ts";

/** Discord's limits: custom_id 100 characters, a modal title 45, a text input's placeholder 100. */
const MAX_CUSTOM_ID = 100;
const MAX_TITLE = 45;
const MAX_PLACEHOLDER = 100;
/** What the modal accepts as an answer (a text input's max_length is at most 4000). */
export const MAX_ANSWER_CHARS = 2_000;
/** The text input's own custom_id inside the modal. */
export const ANSWER_FIELD = "answer";
const MAX_QUESTION_SHOWN = 1_500;

export interface TaskInputTarget {
  inputId: string;
  agentId: string;
}

/** `tin:<input id>:<agent id>` on the button, `tinm:…` on the modal; null when it cannot fit. */
export function taskInputCustomId(
  target: TaskInputTarget,
  kind: "button" | "modal",
): string | null {
  const id = `${kind === "button" ? "tin" : "tinm"}:${target.inputId}:${target.agentId}`;
  return id.length <= MAX_CUSTOM_ID ? id : null;
}

export function parseTaskInputCustomId(
  customId: string,
): (TaskInputTarget & { kind: "button" | "modal" }) | null {
  const match = /^(tin|tinm):([0-9a-f]{16}):([A-Za-z0-9][A-Za-z0-9_-]{0,63})$/.exec(customId);
  if (!match) return null;
  return { kind: match[1] === "tin" ? "button" : "modal", inputId: match[2]!, agentId: match[3]! };
}

export interface QuestionPromptInput extends TaskInputTarget {
  agentName: string;
  question: string;
  requesterDiscordId: string | null;
  expiresAt: number;
}

export function questionPrompt(input: QuestionPromptInput): DiscordMessageBody {
  const button = taskInputCustomId(input, "button");
  if (!button) throw new Error("agent id too long for an Answer button");
  const who = input.requesterDiscordId ? `<@${input.requesterDiscordId}>` : "the person who asked";
  const deadline = Math.floor(input.expiresAt / 1000);
  const question = clip(input.question, MAX_QUESTION_SHOWN)
    .split("\n")
    .map((line) => `> ${escapeMarkdown(line)}`)
    .join("\n");
  return {
    content:
      `❓ ${escapeMarkdown(input.agentName)} needs an answer to go on with the task:\n${question}\n` +
      `Only ${who} can answer, until <t:${deadline}:f> (<t:${deadline}:R>); without an answer the task is cancelled.`,
    components: [
      { type: 1, components: [{ type: 2, style: 1, label: "Answer", custom_id: button }] },
    ],
  };
}

/** The response to a click on Answer: a modal with one paragraph input (type 9). */
export function answerModal(target: TaskInputTarget, question: string) {
  const customId = taskInputCustomId(target, "modal");
  if (!customId) throw new Error("agent id too long for a modal");
  return {
    type: ResponseType.MODAL,
    data: {
      custom_id: customId,
      title: clip("Answer the task's question", MAX_TITLE),
      components: [
        {
          type: 1,
          components: [
            {
              type: 4,
              custom_id: ANSWER_FIELD,
              label: "Your answer",
              style: 2,
              min_length: 1,
              max_length: MAX_ANSWER_CHARS,
              required: true,
              placeholder: clip(question.replace(/\s+/g, " "), MAX_PLACEHOLDER),
            },
          ],
        },
      ],
    },
  };
}

/** What the question becomes once answered, or once nobody answered in time. */
export function questionResultText(
  outcome: "answered" | "expired",
  by?: string,
  answer?: string,
): string {
  if (outcome === "expired")
    return `⌛ Nobody answered within ${INPUT_WINDOW_MS / 3_600_000} hours: the task was cancelled.`;
  return `✅ ${escapeMarkdown(by ?? "Someone")} answered: ${escapeMarkdown(clip(answer ?? "", 1_500))}`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~|>]/g, (ch) => `\\${ch}`);
}
