// Who is asking (principal.ts) and the one check of what they may do (authorize.ts). Pure: every
// surface builds its principal at its edge and asks here; nothing here reads a binding.
export * from "./authorize.ts";
export * from "./principal.ts";
export * from "./principal-shape.ts";
export * from "./place-policy.ts";
export * from "./place-tools.ts";
