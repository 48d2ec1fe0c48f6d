// A principal read back from storage (a journalled turn, a stored task or schedule): validated,
// since what decides authority must not be whatever a stored row happens to hold. Plain zod, so
// the room and the task object share it.
import { z } from "zod";
import { MEMBER_PLATFORMS, type Principal, SCOPES } from "./principal.ts";

/** Deep enough for a chain of delegations (MAX_DELEGATION_DEPTH) under a schedule. */
const MAX_PRINCIPAL_DEPTH = 8;

const TokenShape = z.object({
  kind: z.literal("token"),
  id: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  agents: z.array(z.string()).nullable(),
  userPrefix: z.string().nullable(),
});

const MemberShape = z.object({
  kind: z.literal("member"),
  platform: z.enum(MEMBER_PLATFORMS),
  userId: z.string(),
  manager: z.boolean(),
  owner: z.boolean(),
  guildId: z.string().nullable().optional(),
});

export const PrincipalShape: z.ZodType<Principal> = z.lazy(() =>
  z
    .discriminatedUnion("kind", [
      TokenShape,
      MemberShape,
      z.object({ kind: z.literal("agent"), agentId: z.string(), for: PrincipalShape }),
      z.object({
        kind: z.literal("schedule"),
        scheduleId: z.string(),
        for: PrincipalShape.nullable(),
      }),
    ])
    .refine((principal) => depthOf(principal) <= MAX_PRINCIPAL_DEPTH, {
      message: `a principal nests at most ${MAX_PRINCIPAL_DEPTH} deep`,
    }),
);

function depthOf(principal: Principal | null): number {
  let depth = 0;
  let current: Principal | null = principal;
  while (current && (current.kind === "agent" || current.kind === "schedule")) {
    depth++;
    current = current.for;
  }
  return depth;
}
