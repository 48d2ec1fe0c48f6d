// What an agent is told after filing a proposal: it never waits for the answer, so it learns the
// proposal is pending (or, with auto-approval, done) and carries on with its turn.
import type { FiledProposal } from "./plugin-services.ts";

export function pendingProposalText(filed: FiledProposal, what: string): string {
  const { proposal } = filed;
  switch (proposal.status) {
    case "approved":
      return proposal.decidedBy === "settings"
        ? `Done: the proposal to ${what} was approved at once by your settings.`
        : `The proposal to ${what} was already approved.`;
    case "denied":
      return `The proposal to ${what} was denied by a person; do not propose it again now.`;
    case "expired":
      return `The proposal to ${what} expired unanswered; do not propose it again now.`;
    case "pending":
      return (
        `Proposal ${proposal.id} to ${what} is pending: a person approves or denies it (in the ` +
        "API's proposals list, or with the buttons posted on Discord). Do not wait for the answer: " +
        "carry on, and tell the person it needs their approval."
      );
  }
}
