// A chat place's rules for one turn or task (a Discord server's or channel's settings, a Telegram
// or Slack client's): which tools it offers, whose roles allow which, the daily budgets, and the
// filter's verdict on the text the model will read. The surface resolves it once, at admission
// (src/clients/chat/admission.ts); it then travels with the turn or task as the principal does,
// journalled, and is validated when read back, since it decides what a model may be offered.
import { z } from "zod";
import { FILTER_VERDICTS, type FilterRules, type FilterVerdict } from "./message-filter.ts";

export interface PlacePolicy {
  /** Over the character's `respond.mode`; "never" answers nobody there, not even a mention. */
  respond?: "mentions" | "always" | "never";
  /** When set, only these tools are offered (a name, or `<server>__*` for all of a server's). */
  tools?: string[];
  /** Tools the speaking member may not trigger here (their roles do not allow them). */
  withheldTools?: string[];
  /**
   * Daily token ceilings (UTC) of the place: `member` for the speaking member's turns there,
   * `server` for all turns in the principal's server (its `guildId`). Read with the agent's own
   * ceiling before every model call; a turn over one is answered with one notice a day, then not
   * at all; a task over one stops.
   */
  budgets?: { member?: number; server?: number };
  /** The place's filter declined the message (./message-filter.ts): stored, never answered. */
  filtered?: FilterVerdict;
  /**
   * The place's filter rules, carried only where the text the model will read is not known at
   * admission (a voice note: the room filters its transcript before the model).
   */
  filter?: FilterRules;
}

/** Whether a place lets a tool be offered, or called, in the turn or task. */
export function placeAllowsTool(place: PlacePolicy | null | undefined, name: string): boolean {
  if (!place) return true;
  const matches = (pattern: string) =>
    pattern === name || (pattern.endsWith("__*") && name.startsWith(pattern.slice(0, -1)));
  if (place.tools && !place.tools.some(matches)) return false;
  return !(place.withheldTools ?? []).some(matches);
}

/** Why a place refuses a tool call the model made anyway (a name it was not offered). */
export function placeToolRefusal(name: string): string {
  return `the tool "${name}" is not available here (this place's settings or your roles do not allow it)`;
}

/**
 * What a place's rules say for work done on its behalf elsewhere (another agent's task or turn
 * asked by delegation): its tools and budgets still hold; whether it answers there does not.
 */
export function inheritedPlace(place: PlacePolicy | null | undefined): PlacePolicy | undefined {
  if (!place) return undefined;
  const inherited: PlacePolicy = {
    ...(place.tools ? { tools: [...place.tools] } : {}),
    ...(place.withheldTools ? { withheldTools: [...place.withheldTools] } : {}),
    ...(place.budgets ? { budgets: { ...place.budgets } } : {}),
  };
  return Object.keys(inherited).length > 0 ? inherited : undefined;
}

const Budget = z.number().int().positive();

/** A place read back from storage (a journalled turn, a stored task or schedule). */
export const PlacePolicyShape: z.ZodType<PlacePolicy> = z.object({
  respond: z.enum(["mentions", "always", "never"]).optional(),
  tools: z.array(z.string()).optional(),
  withheldTools: z.array(z.string()).optional(),
  budgets: z.object({ member: Budget.optional(), server: Budget.optional() }).optional(),
  filtered: z.enum(FILTER_VERDICTS).optional(),
  filter: z
    .object({
      words: z.array(z.string()),
      patterns: z.array(z.string()),
      maxLinks: z.number().int().min(0).optional(),
      minAccountAgeDays: z.number().int().min(1).optional(),
    })
    .optional(),
});
