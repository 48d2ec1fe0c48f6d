// Runs one tool call the model asked for: parse and validate the arguments against the tool's
// JSON Schema, serve a repeat of an identical call from the turn's cache, enforce the tool's
// timeout, and turn every failure into a tool error the model can read and correct. A turn run
// again after a crash passes what its earlier attempts ran, so those calls are not made twice,
// and the calls they started and never finished (killed mid-call: a CPU limit, an eviction), which
// are refused rather than run again.
// Which tools need a person's approval is a required option: chat turns and task steps alike
// must say, so no caller can hand the model a gated tool that runs unasked.
import { Validator } from "@cfworker/json-schema";
import { DeadlineExceeded, withDeadline } from "../util/deadline.ts";
import { stableStringify } from "../util/stable-json.ts";
import type { ApprovalDecision, ToolCallRecord } from "./turn-types.ts";
import { MAX_TOOL_RECORD_CHARS } from "./turn-types.ts";
import type { ToolCall } from "../ports/model.ts";
import type { ToolContext, ToolDefinition, ToolHost, ToolOutput } from "../ports/tools.ts";

export interface ToolExecutorOptions {
  host: ToolHost;
  tools: ToolDefinition[];
  /**
   * Names of the tools that run only with a person's yes (a character's `settings.toolApproval`).
   * Required, never defaulted: a gated call either pauses its loop or is refused.
   */
  approvalRequired: readonly string[];
  defaultTimeoutMs: number;
  maxResultChars: number;
  now: () => number;
  /**
   * What this turn's earlier, interrupted attempts did, by call key (toolCallKey): a successful
   * output, or "started" for a call one of them began and never finished.
   */
  remembered?: ReadonlyMap<string, ToolOutput | "started">;
  /**
   * Told "started" as a call begins, before the tool does anything, and its output once the tool
   * returns, to journal for a later attempt.
   */
  onOutput?: (key: string, entry: ToolOutput | "started") => void;
}

/**
 * Why a call an interrupted attempt started is not run again: whatever killed that attempt (a
 * CPU limit, most likely, which no timeout can stop) would most likely kill this one too.
 */
export const UNFINISHED_CALL_ERROR =
  "this call was started in an earlier attempt of the turn that did not finish (it may have exceeded the CPU limit); it is not run again";

export interface ToolExecution {
  record: ToolCallRecord;
  /** The text that goes back to the model as the tool message. */
  modelContent: string;
}

const WRAPPER_KEYWORDS = new Set(["properties", "items", "prefixItems", "false"]);

type Context = Omit<ToolContext, "callId" | "signal"> & { signal: AbortSignal; model: string };

export class ToolExecutor {
  private readonly byName: Map<string, ToolDefinition>;
  private readonly validators = new Map<string, Validator | Error>();
  private readonly cache = new Map<string, ToolOutput>();
  private calls = 0;

  private readonly options: ToolExecutorOptions;

  constructor(options: ToolExecutorOptions) {
    this.options = options;
    this.byName = new Map(
      withApprovalGates(options.tools, options.approvalRequired).map((tool) => [tool.name, tool]),
    );
  }

  /** The tools as the executor runs them, each gated tool marked `requiresApproval`. */
  get tools(): ToolDefinition[] {
    return [...this.byName.values()];
  }

  /** Forget cached results, e.g. when another model takes over and must re-check tool state. */
  clearCache(): void {
    this.cache.clear();
  }

  /**
   * The validated arguments of a call that must wait for a person's approval before it runs, or
   * null when the call can go ahead (or fails on its own: unknown tool, invalid arguments, which
   * the model is told without bothering anyone).
   */
  awaitingApproval(call: ToolCall): Record<string, unknown> | null {
    const tool = this.byName.get(call.name);
    if (!tool?.requiresApproval) return null;
    const parsed = parseArguments(call.arguments);
    if (!parsed.ok || this.validate(tool, parsed.value)) return null;
    const key = toolCallKey(tool.name, parsed.value);
    if (this.cache.has(key) || this.options.remembered?.has(key)) return null;
    return parsed.value;
  }

  async execute(
    call: ToolCall,
    context: Context,
    approval?: ApprovalDecision,
  ): Promise<ToolExecution> {
    const started = this.options.now();
    const callIndex = this.calls++;
    const parsed = parseArguments(call.arguments);
    const tool = this.byName.get(call.name);
    const finish = (output: ToolOutput, cached: boolean): ToolExecution =>
      this.finish(call, output, {
        cached,
        started,
        model: context.model,
        approval: approval && tool?.requiresApproval ? approval : undefined,
      });

    if (!tool) {
      const known = [...this.byName.keys()].join(", ") || "none";
      return finish(
        { ok: false, error: `unknown tool "${call.name}"; available tools: ${known}` },
        false,
      );
    }
    if (!parsed.ok) return finish({ ok: false, error: parsed.error }, false);
    const invalid = this.validate(tool, parsed.value);
    if (invalid) return finish({ ok: false, error: invalid }, false);

    const key = toolCallKey(tool.name, parsed.value);
    // Not cleared with the cache on failover: a call an interrupted attempt made has happened.
    const hit = this.cache.get(key) ?? this.options.remembered?.get(key);
    if (hit === "started") return finish({ ok: false, error: UNFINISHED_CALL_ERROR }, false);
    if (hit) return finish(hit, true);

    if (tool.requiresApproval && approval !== "approved")
      return finish({ ok: false, error: refusal(tool.name, approval) }, false);

    // Journalled before the tool's first step: if this attempt dies inside the call, the next
    // one knows it began.
    this.options.onOutput?.(key, "started");
    const output = await this.runWithTimeout(tool, parsed.value, {
      ...context,
      callId: `${context.turnId}:${callIndex}`,
    });
    if (output.ok) this.cache.set(key, output);
    // A failure is told too: the call finished, and a later attempt may try it again.
    this.options.onOutput?.(key, output);
    return finish(output, false);
  }

  /**
   * A call whose output came from elsewhere: a deferred call (delegate_task) answered once the
   * work it started has finished. Recorded and shown to the model like any other output.
   */
  given(
    call: ToolCall,
    output: ToolOutput,
    model: string,
    approval?: ApprovalDecision,
  ): ToolExecution {
    this.calls++;
    const tool = this.byName.get(call.name);
    return this.finish(call, output, {
      cached: false,
      started: this.options.now(),
      model,
      approval: approval && tool?.requiresApproval ? approval : undefined,
    });
  }

  /**
   * The validated arguments of a call the loop hands to its host instead of running it (a tool
   * marked `deferred`), or null when it runs here (or fails on its own: invalid arguments).
   */
  deferral(call: ToolCall): Record<string, unknown> | null {
    const tool = this.byName.get(call.name);
    if (!tool?.deferred) return null;
    const parsed = parseArguments(call.arguments);
    if (!parsed.ok || this.validate(tool, parsed.value)) return null;
    return parsed.value;
  }

  private finish(
    call: ToolCall,
    output: ToolOutput,
    how: { cached: boolean; started: number; model: string; approval?: ApprovalDecision },
  ): ToolExecution {
    const parsed = parseArguments(call.arguments);
    const text = output.ok ? output.content : `Error: ${output.error}`;
    const modelContent = truncate(text, this.options.maxResultChars);
    return {
      modelContent,
      record: {
        id: call.id,
        name: call.name,
        arguments: parsed.ok ? parsed.value : call.arguments,
        ok: output.ok,
        output: truncate(text, MAX_TOOL_RECORD_CHARS),
        cached: how.cached,
        durationMs: this.options.now() - how.started,
        model: how.model,
        ...(how.approval ? { approval: how.approval } : {}),
        // A repeat served from the cache cost the other agent nothing this time.
        ...(output.usage && !how.cached ? { usage: output.usage } : {}),
      },
    };
  }

  private validate(tool: ToolDefinition, args: Record<string, unknown>): string | null {
    let validator = this.validators.get(tool.name);
    if (!validator) {
      try {
        validator = new Validator(
          tool.parameters as ConstructorParameters<typeof Validator>[0],
          "2020-12",
          false,
        );
      } catch (error) {
        validator = error instanceof Error ? error : new Error(String(error));
      }
      this.validators.set(tool.name, validator);
    }
    if (validator instanceof Error)
      return `${tool.name} has an unusable argument schema (${validator.message})`;
    const result = validator.validate(args);
    if (result.valid) return null;
    // Wrapper errors ("property x does not match schema") repeat the specific error below them.
    const problems = result.errors
      .filter((error) => !WRAPPER_KEYWORDS.has(error.keyword))
      .slice(0, 6)
      .map((error) => `${error.instanceLocation.replace(/^#/, "") || "/"}: ${error.error}`);
    return `invalid arguments for ${tool.name}: ${problems.join("; ")}`;
  }

  private async runWithTimeout(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    context: Omit<ToolContext, "signal"> & { signal: AbortSignal },
  ): Promise<ToolOutput> {
    const timeoutMs = tool.timeoutMs ?? this.options.defaultTimeoutMs;
    const controller = new AbortController();
    const onAbort = () => controller.abort(context.signal.reason);
    context.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const run = this.options.host.call(tool.name, args, {
        ...context,
        signal: controller.signal,
      });
      return await withDeadline(run, timeoutMs, () => controller.abort(new Error("tool timeout")));
    } catch (error) {
      if (error instanceof DeadlineExceeded)
        return { ok: false, error: `${tool.name} timed out after ${timeoutMs} ms` };
      return { ok: false, error: error instanceof Error ? error.message : String(error) };
    } finally {
      context.signal.removeEventListener("abort", onAbort);
    }
  }
}

/** The tools with `requiresApproval` set on every one named in `gated`. */
export function withApprovalGates(
  tools: readonly ToolDefinition[],
  gated: readonly string[],
): ToolDefinition[] {
  const names = new Set(gated);
  return tools.map((tool) => (names.has(tool.name) ? { ...tool, requiresApproval: true } : tool));
}

/** What makes two calls of a turn the same call: the tool and its arguments (key order aside). */
export function toolCallKey(name: string, args: Record<string, unknown>): string {
  return `${name}\u0000${stableStringify(args)}`;
}

/** What the model is told when a tool needing approval did not get it. */
function refusal(name: string, decision: ApprovalDecision | undefined): string {
  switch (decision) {
    case "denied":
      return `the user denied permission to run ${name}; it was not run. Do not call it again for this request: tell them what you would have done instead`;
    case "expired":
      return `nobody approved ${name} within the time allowed, so it was not run. Do not call it again for this request: tell the user it needs their approval`;
    default:
      return `${name} needs a person's approval before it runs, and this conversation cannot ask for it`;
  }
}

function parseArguments(
  raw: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  // Some models send "" for a tool without parameters.
  if (raw.trim() === "") return { ok: true, value: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, error: `arguments are not valid JSON: ${truncate(raw, 200)}` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, error: "arguments must be a JSON object" };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

function truncate(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}... [truncated ${text.length - max} characters]`;
}
