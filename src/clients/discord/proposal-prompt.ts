// A proposal on Discord: what the agent asked to change about itself, posted in the channel where
// the turn or task ran, with Approve / Deny buttons. Any member sees it; only who manages the bot
// there (Manage Server in a server, the bot's owners in a DM) can answer: the click is checked in
// src/http/routes/discord/discord.ts, and the proposal itself is decided by src/plugins/proposal-desk.ts.
import type { Proposal } from "../../db/stores/proposal-store.ts";
import type { DiscordMessageBody } from "./rest.ts";

const PREFIX = "pr";
const MAX_CUSTOM_ID = 100;
const MAX_BODY_PREVIEW = 900;

export interface ProposalButton {
  approve: boolean;
  proposalId: string;
  agentId: string;
}

export function proposalCustomId(button: ProposalButton): string | null {
  const id = `${PREFIX}:${button.approve ? "y" : "n"}:${button.proposalId}:${button.agentId}`;
  return id.length <= MAX_CUSTOM_ID ? id : null;
}

export function parseProposalCustomId(customId: string): ProposalButton | null {
  const match = /^pr:([yn]):([0-9a-f]{16}):([A-Za-z0-9][A-Za-z0-9_-]{0,63})$/.exec(customId);
  if (!match) return null;
  return { approve: match[1] === "y", proposalId: match[2]!, agentId: match[3]! };
}

export function proposalPrompt(proposal: Proposal, agentName: string): DiscordMessageBody {
  const button = { proposalId: proposal.id, agentId: proposal.agentId };
  const approve = proposalCustomId({ ...button, approve: true });
  const deny = proposalCustomId({ ...button, approve: false });
  if (!approve || !deny) throw new Error("agent id too long for a proposal button");
  const who = escapeMarkdown(agentName);
  const change = proposal.change;
  const what =
    change.kind === "skill"
      ? `🧩 ${who} proposes to save the skill \`${change.skill.name}\`: ${escapeMarkdown(change.skill.description)}\n` +
        "```md\n" +
        fence(change.skill.body) +
        "\n```"
      : `🧰 ${who} asks for the MCP server \`${change.server}\` from this deployment's catalog.\nWhy: ${escapeMarkdown(change.reason)}`;
  return {
    content: `${what}\nOnly who manages the bot here (server managers; the bot's owners in a DM) can approve or deny.`,
    components: [
      {
        type: 1,
        components: [
          { type: 2, style: 3, label: "Approve", custom_id: approve },
          { type: 2, style: 4, label: "Deny", custom_id: deny },
        ],
      },
    ],
  };
}

/** What the prompt becomes once decided (buttons removed). */
export function proposalResultText(proposal: Proposal, by: string, applied: string | null): string {
  const subject =
    proposal.change.kind === "skill"
      ? `the skill \`${proposal.change.skill.name}\``
      : `the MCP server \`${proposal.change.server}\``;
  return proposal.status === "approved"
    ? `✅ ${escapeMarkdown(by)} approved ${subject}${applied ? ` (${applied})` : ""}.`
    : `🚫 ${escapeMarkdown(by)} denied ${subject}.`;
}

function fence(body: string): string {
  const shown = body.length > MAX_BODY_PREVIEW ? `${body.slice(0, MAX_BODY_PREVIEW)}\n…` : body;
  // A ``` inside the body would close the block early.
  return shown.replaceAll("```", "`\u200b``");
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_~|>@]/g, (ch) => `\\${ch}`);
}
