// One reply surface for the rooms and the task objects, made of each platform's: a delivery target
// goes to the surface that owns its `kind`. Posted prompts carry no kind; they go to the surface
// that says it owns them, else to the first (Discord's, whose prompts predate the router). No
// platform code here: src/durable-objects.ts lists the platforms.
import type {
  DeliveryTarget,
  PostedPrompt,
  ReplySurface,
} from "../../objects/shared/reply-surface.ts";

export interface PlatformSurface {
  /** The target kinds this surface writes and reads (`discord`, `telegram-message`, …). */
  kinds: readonly string[];
  surface: ReplySurface;
  /** Whether a posted prompt is this surface's (absent: only the first surface's fallback). */
  ownsPosted?(posted: PostedPrompt): boolean;
}

export function createSurfaceRouter(
  platforms: readonly [PlatformSurface, ...PlatformSurface[]],
): ReplySurface {
  const byKind = new Map<string, ReplySurface>();
  for (const platform of platforms)
    for (const kind of platform.kinds) byKind.set(kind, platform.surface);
  const fallback = platforms[0].surface;
  // An unknown kind (a target journalled by a surface since removed) fails where Discord's did.
  const of = (target: DeliveryTarget) => byKind.get(target.kind) ?? fallback;
  const ofPosted = (posted: PostedPrompt) =>
    platforms.find((platform) => platform.ownsPosted?.(posted))?.surface ?? fallback;
  return {
    canAskApproval: (target, agentId) => of(target).canAskApproval(target, agentId),
    sendReply: (target, job, onSent) => of(target).sendReply(target, job, onSent),
    postLine: (target, text) => of(target).postLine(target, text),
    postApprovalPrompt: (target, request) => of(target).postApprovalPrompt(target, request),
    closeExpiredPrompt: (posted, tool) => ofPosted(posted).closeExpiredPrompt(posted, tool),
    postQuestion: (target, request) => of(target).postQuestion(target, request),
    closeExpiredQuestion: (posted) => ofPosted(posted).closeExpiredQuestion(posted),
    openingUsed: (target) => of(target).openingUsed(target),
    afterAnswer: (target, via) => of(target).afterAnswer(target, via),
    isPermanentFailure: (error) =>
      platforms.some((platform) => platform.surface.isPermanentFailure(error)),
    startTyping: (target) => of(target).startTyping?.(target) ?? null,
    async postProposal(target, request) {
      await of(target).postProposal?.(target, request);
    },
  };
}
