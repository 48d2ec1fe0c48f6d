// The chat and publishing surfaces whose variables are theirs alone, by prefix: a malformed one
// turns that surface off (its routes answer 503 naming the variable, /health says why), not the
// whole worker; config.ts decides, the routes and /health ask here. A mistake in any other
// variable (the model, the admin token, the limits) still stops every route.
import type { Env } from "./env.ts";
import { NotConfiguredError } from "./runtime/util/errors.ts";

const SURFACE_PREFIXES = {
  discord: "DISCORD_",
  telegram: "TELEGRAM_",
  slack: "SLACK_",
  instagram: "INSTAGRAM_",
} as const;
export type Surface = keyof typeof SURFACE_PREFIXES;
export const SURFACES = Object.keys(SURFACE_PREFIXES) as Surface[];
/** The surfaces turned off, each with its problem (the variable and the rule, never its value). */
export type SurfacesOff = Partial<Record<Surface, string>>;

const SURFACE_NAMES: Record<Surface, string> = {
  discord: "Discord",
  telegram: "Telegram",
  slack: "Slack",
  instagram: "Instagram",
};

/** The surface a variable belongs to, by its name; undefined: the whole worker's. */
export function surfaceOf(variable: string): Surface | undefined {
  return SURFACES.find((surface) => variable.startsWith(SURFACE_PREFIXES[surface]));
}

/** The 503 of a surface's route when it is off or not set up: names the variable to fix. */
export function surfaceUnavailable(
  config: { surfacesOff: SurfacesOff },
  surface: Surface,
  missing: string,
): NotConfiguredError {
  const problem = config.surfacesOff[surface];
  return new NotConfiguredError(
    problem
      ? `${SURFACE_NAMES[surface]} is off: ${problem}`
      : `${SURFACE_NAMES[surface]} is not configured: set ${missing}`,
  );
}

/** DISCORD_PUBLIC_KEY when it is one (64 hex characters), else null: interactions need it. */
export function discordPublicKey(env: Pick<Env, "DISCORD_PUBLIC_KEY">): string | null {
  const key = env.DISCORD_PUBLIC_KEY?.trim();
  return key && /^[0-9a-fA-F]{64}$/.test(key) ? key : null;
}
