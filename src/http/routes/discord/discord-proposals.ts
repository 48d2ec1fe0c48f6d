// Approve / Deny on a proposal an agent posted on Discord (src/clients/discord/proposal-prompt.ts).
// Only who manages the bot where the click happens may answer (Manage Server in a server, the
// bot's owners in a DM), and only in the channel where the proposal was made; the proposal desk
// applies the change and records who decided.
import {
  EPHEMERAL,
  invoker,
  ResponseType,
  type ComponentInteraction,
} from "../../../clients/discord/interaction.ts";
import type { DiscordOwners } from "../../../clients/discord/owners.ts";
import { isManager, managersHere } from "../../../clients/discord/permissions.ts";
import {
  type ProposalButton,
  proposalResultText,
} from "../../../clients/discord/proposal-prompt.ts";
import type { Env } from "../../../env.ts";
import { stores } from "../../../db/stores/index.ts";
import { proposalDesk } from "../../../plugins/room-plugins.ts";
import { AppError } from "../../../runtime/util/errors.ts";

function privately(content: string) {
  return {
    type: ResponseType.MESSAGE,
    data: { content, allowed_mentions: { parse: [] }, flags: EPHEMERAL },
  };
}

export async function answerProposalClick(
  env: Env,
  interaction: ComponentInteraction,
  button: ProposalButton,
  owners: DiscordOwners,
) {
  const user = invoker(interaction);
  if (!user || !interaction.channel_id) return privately("That button is no longer valid.");
  if (!(await isManager(interaction, owners)))
    return privately(
      `Only ${managersHere(interaction)} can approve or deny what an agent proposes here.`,
    );
  const proposal = await stores(env).proposals.get(button.agentId, button.proposalId);
  // A proposal is answered where it was made (its buttons cannot be carried elsewhere).
  if (!proposal || proposal.origin.roomId !== `discord:${interaction.channel_id}`)
    return privately("That button is no longer valid.");
  if (proposal.status !== "pending")
    return privately(`This proposal was already ${proposal.status}.`);
  const name = user.global_name ?? user.username;
  try {
    const decision = await proposalDesk(env).decide(
      button.agentId,
      button.proposalId,
      button.approve,
      `discord:${user.id}`,
    );
    return {
      type: ResponseType.UPDATE_MESSAGE,
      data: {
        content: proposalResultText(decision.proposal, name, decision.applied),
        components: [],
        allowed_mentions: { parse: [] },
      },
    };
  } catch (error) {
    // Already decided, or the change cannot be applied any more: said privately, buttons kept.
    if (error instanceof AppError && error.status < 500) return privately(error.message);
    throw error;
  }
}
