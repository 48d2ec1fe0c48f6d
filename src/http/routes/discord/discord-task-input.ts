// A `needs_input` task's question on Discord: a click on its Answer button (`tin:`) opens a modal
// (interaction response type 9) for the person who started the task, anyone else gets a private
// "only the person who asked"; the modal's submission (interaction type 5, `tinm:`) goes to the
// agent's AgentTasks object, and the question message is replaced by the answer (type 7).
import type { Context } from "hono";
import type { AppEnv } from "../../app-env.ts";
import { interactionDelivery } from "../../../clients/discord/interaction-delivery.ts";
import {
  EPHEMERAL,
  invoker,
  modalValue,
  ResponseType,
  type ComponentInteraction,
  type ModalSubmitInteraction,
} from "../../../clients/discord/interaction.ts";
import {
  ANSWER_FIELD,
  answerModal,
  MAX_ANSWER_CHARS,
  parseTaskInputCustomId,
  questionResultText,
} from "../../../clients/discord/task-input.ts";
import { answerTaskQuestion, openTaskQuestion } from "../../../objects/tasks/task-client.ts";
import { admitText } from "../../../clients/chat/admission.ts";
import { stores } from "../../../db/stores/index.ts";

type Ctx = Context<AppEnv>;

function privately(content: string) {
  return {
    type: ResponseType.MESSAGE,
    data: { content, flags: EPHEMERAL, allowed_mentions: { parse: [] } },
  };
}

/** A click on a question's Answer button; null when the custom id is not one. */
export async function taskQuestionClick(c: Ctx, interaction: ComponentInteraction) {
  const target = parseTaskInputCustomId(interaction.data.custom_id);
  if (target?.kind !== "button") return null;
  const user = invoker(interaction);
  if (!user) return privately("That button is no longer valid.");
  const opened = await openTaskQuestion(
    c.env,
    target.agentId,
    target.inputId,
    `discord:${user.id}`,
  );
  switch (opened.status) {
    case "not_yours":
      return privately("Only the person who started this task can answer its question.");
    case "gone":
      return privately(
        "This question is no longer waiting for an answer: it was answered, or it expired.",
      );
    case "open":
      return answerModal(target, opened.question);
  }
}

/** The question's modal, submitted; null when the custom id is not one. */
export async function taskQuestionSubmit(c: Ctx, interaction: ModalSubmitInteraction) {
  const target = parseTaskInputCustomId(interaction.data.custom_id);
  if (target?.kind !== "modal") return null;
  const user = invoker(interaction);
  const text = modalValue(interaction, ANSWER_FIELD)?.trim().slice(0, MAX_ANSWER_CHARS);
  if (!user || !interaction.channel_id || !text)
    return privately("The answer was empty: nothing was sent.");
  // The answer is text the task's next steps read: the server's filter reads it first.
  const guildId = interaction.guild_id;
  const config = guildId ? await stores(c.env).discord.readConfig() : null;
  if (admitText({ filter: config?.guilds[guildId!]?.filter, text, now: Date.now() }))
    return privately("This server's filter declined your answer; it was not sent.");
  const name = user.global_name ?? user.username;
  const result = await answerTaskQuestion(c.env, target.agentId, {
    inputId: target.inputId,
    text,
    userId: `discord:${user.id}`,
    userName: name,
    // The submission's own interaction: its token is fresh, and its @original is the question.
    via: interactionDelivery(interaction, interaction.channel_id, Date.now()),
  });
  switch (result.status) {
    case "not_yours":
      return privately("Only the person who started this task can answer its question.");
    case "gone":
    // A modal never gets `on_discord` (the REST answer to a Discord task); read it as gone.
    case "on_discord":
      return privately(
        "This question is no longer waiting for an answer: it was answered, or it expired.",
      );
    case "resolved":
      return {
        type: ResponseType.UPDATE_MESSAGE,
        data: {
          content: questionResultText("answered", name, text),
          components: [],
          allowed_mentions: { parse: [] },
        },
      };
  }
}
