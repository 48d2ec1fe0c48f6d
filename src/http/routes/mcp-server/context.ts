// What every tool and resource of an agent's MCP server acts with: the worker's bindings, the
// token that the auth middleware admitted (as a principal of src/runtime/access/), the agent of
// the URL, and the request's waitUntil for work that outlives the answer (rate-limit charges).
import type { Env } from "../../../env.ts";
import type { KeepAlive } from "../../../rate-limits/admission.ts";
import type { Principal } from "../../app-env.ts";

export interface McpCallContext {
  env: Env;
  principal: Principal;
  agentId: string;
  keepAlive?: KeepAlive;
}
