// The one admission step of a chat place: every path from a platform to a model, or to text a
// model will later read, passes here before anything is queued or stored. Chat messages on each
// platform, Discord's /chat, /task and /remember, and edits everywhere. It yields the principal
// and the place's policy (tools allowed, budgets, the filter's verdict on the text the model will
// read), which then travel with the turn or task and are applied at every model and tool call
// (src/runtime/access/place-policy.ts). A voice note is admitted twice: here, before transcription
// (its budgets are read by the room before it transcribes), and its transcript by the room,
// through the same filter, before the model. test/security/place-matrix.test.ts holds every path.
import {
  type FilterRules,
  type FilterVerdict,
  filterVerdict,
} from "../../runtime/access/message-filter.ts";
import { type PlacePolicy, placeAllowsTool } from "../../runtime/access/place-policy.ts";
import type { Principal } from "../../runtime/access/principal.ts";

export interface AdmissionRequest {
  principal: Principal;
  /** What the place's settings say (tools, roles, budgets, respond), as the surface resolved them. */
  place?: PlacePolicy;
  /** The place's filter before the model; null or absent where none is set. */
  filter?: FilterRules | null;
  /** The text the model will read (a message, a task's goal, a fact). */
  text: string;
  /** When the sender's account was made, where the platform says (Discord); else null. */
  accountCreatedAt?: number | null;
  now: number;
  /**
   * The filter's verdict when the surface already read it for this message (the Gateway reads it
   * once, for its auto-thread too); admission then applies it rather than read it again.
   */
  verdict?: FilterVerdict | null;
  /** The text the model will read is not known yet (a voice note): the room filters it later. */
  transcribed?: boolean;
}

export interface Admission {
  principal: Principal;
  /** Undefined when the place sets nothing: turns in unconfigured places carry nothing extra. */
  place?: PlacePolicy;
  /** The filter declined the text: it may be stored as declined, never answered or acted on. */
  filtered: FilterVerdict | null;
}

/** Admits one text into a place: the principal, and the policy with the filter's verdict. */
export function admit(request: AdmissionRequest): Admission {
  const { filter } = request;
  const filtered =
    request.verdict !== undefined
      ? request.verdict
      : filter
        ? filterVerdict(filter, {
            text: request.text,
            accountCreatedAt: request.accountCreatedAt ?? null,
            now: request.now,
          })
        : null;
  const place: PlacePolicy = {
    ...request.place,
    ...(filtered ? { filtered } : {}),
    // Only the words of a voice note are still to come; a caption already declined needs no more.
    ...(request.transcribed && filter && !filtered ? { filter: rulesOf(filter) } : {}),
  };
  return {
    principal: request.principal,
    ...(Object.keys(place).length > 0 ? { place } : {}),
    filtered,
  };
}

/**
 * What an edit does to the stored message: the edited text is admitted like a new message, and
 * one the filter declines is removed rather than kept for later prompts to read.
 */
export function admitEdit(request: {
  filter?: FilterRules | null;
  text: string;
  now: number;
}): { kind: "edit"; text: string } | { kind: "delete"; verdict: FilterVerdict } {
  const verdict = admitText(request);
  return verdict ? { kind: "delete", verdict } : { kind: "edit", text: request.text };
}

/**
 * The filter's verdict on text a person adds to work already admitted (an edit, an answer to a
 * task's question): the principal and the policy were admitted with the work; the text is new.
 */
export function admitText(request: {
  filter?: FilterRules | null;
  text: string;
  now: number;
}): FilterVerdict | null {
  const { filter, text, now } = request;
  return filter ? filterVerdict(filter, { text, accountCreatedAt: null, now }) : null;
}

/**
 * Why an admitted command may not run a tool's work directly (Discord /remember is the
 * `remember` tool by hand): the filter declined its text, or the place withholds the tool.
 */
export function commandRefusal(admission: Admission, tool: string): "filtered" | "tool" | null {
  if (admission.filtered) return "filtered";
  return placeAllowsTool(admission.place, tool) ? null : "tool";
}

/** Just the rules the verdict reads: what a voice note's turn carries to its room. */
function rulesOf({ words, patterns, maxLinks, minAccountAgeDays }: FilterRules): FilterRules {
  return {
    words,
    patterns,
    ...(maxLinks !== undefined ? { maxLinks } : {}),
    ...(minAccountAgeDays !== undefined ? { minAccountAgeDays } : {}),
  };
}
