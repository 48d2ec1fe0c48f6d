// Tools as the runtime runs them: a tool's definition and output, the context a call gets (who is
// asking, in which room, delegation), and the ToolHost that lists and calls them.
import type { Principal } from "../access/principal.ts";
import type { PlacePolicy } from "../access/place-policy.ts";
import type { TokenUsage, ToolSpec } from "./model.ts";

export interface ToolContext {
  agentId: string;
  roomId: string;
  userId: string;
  turnId: string;
  /** Stable id of this call inside the turn (for idempotent side effects). */
  callId: string;
  signal: AbortSignal;
  /** Set when another agent asked for this turn or task (agent-to-agent delegation). */
  delegation?: DelegationContext;
  /** Who the turn or task acts for (src/runtime/access/): tools that reach further ask with it. */
  principal?: Principal;
  /** The chat place's rules it runs under: work asked of other agents carries them on. */
  place?: PlacePolicy;
}

/** Who asked, agent by agent: bounds the depth of a delegation chain and refuses cycles. */
export interface DelegationContext {
  /** The agents that asked, the first (the one a person or a schedule started) first. */
  chain: string[];
}

/** Model use counted in calls and tokens (a turn's, a task's, or another agent's on our behalf). */
export interface ModelUsage extends TokenUsage {
  modelCalls: number;
}

export type ToolOutput =
  /** `usage`: tokens another agent spent answering (counted against that agent's ceiling). */
  | { ok: true; content: string; data?: unknown; usage?: ModelUsage }
  | { ok: false; error: string; usage?: ModelUsage };

export interface ToolDefinition extends ToolSpec {
  /** Where it comes from: "builtin" or "mcp:<server>". */
  source: string;
  /** A description written outside this deployment (an MCP server's): prompts quote it as data. */
  remoteDescription?: string;
  timeoutMs?: number;
  requiresApproval?: boolean;
  /**
   * The loop does not run it: it pauses and hands the call to its host, which answers later
   * (delegate_task starts another agent's task; the step carries on with that task's result).
   */
  deferred?: boolean;
}

export interface ToolHost {
  list(): Promise<ToolDefinition[]>;
  call(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutput>;
  /** Where remote tools come from and whether each source is usable now (MCP servers). */
  sources?(): ToolSourceStatus[];
}

export interface ToolSourceStatus {
  /** e.g. "MCP server docs". */
  name: string;
  state: "ready" | "authenticating" | "down" | "failed";
  tools: number;
  /** Why it is not ready. */
  detail?: string;
}
