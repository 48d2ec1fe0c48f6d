// How long a person has to answer a tool approval, and the approval's id, for turns and tasks
// alike (wherever they were asked). A surface's buttons carry the id, so it is short and plain.

/** How long a person has to answer before the model is told the tool was not allowed. */
export const APPROVAL_WINDOW_MS = 10 * 60 * 1000;

/** 64 random bits in hex: unguessable, and short enough to leave room for the agent id. */
export function newApprovalId(): string {
  return crypto.randomUUID().replaceAll("-", "").slice(0, 16);
}
