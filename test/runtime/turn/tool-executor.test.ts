// The tool executor and the turn's journal of tool calls, in plain Node: a call is journalled as
// started before the tool does anything, and its output once it returns; a later attempt of the
// turn reuses the outputs and refuses a call an earlier attempt started and never finished (one
// killed mid-call, by a CPU limit most likely, which would kill this attempt too).
import { describe, expect, it } from "vitest";
import {
  ToolExecutor,
  toolCallKey,
  UNFINISHED_CALL_ERROR,
} from "../../../src/runtime/turn/tool-executor.ts";
import type { ToolDefinition, ToolHost, ToolOutput } from "../../../src/runtime/ports/tools.ts";

const READ: ToolDefinition = {
  name: "read_url",
  description: "Read a page.",
  parameters: { type: "object", properties: { url: { type: "string" } }, required: ["url"] },
  source: "builtin",
};
const CONTEXT = {
  agentId: "nova",
  roomId: "room",
  userId: "carol",
  turnId: "turn-1",
  signal: new AbortController().signal,
  model: "test-primary",
};
const call = (url: string) => ({
  id: "c1",
  name: "read_url",
  arguments: JSON.stringify({ url }),
});
const keyOf = (url: string) => toolCallKey("read_url", { url });

/** A tool host that answers from `answer`, noting what the journal held as each call began. */
function host(answer: (url: string) => ToolOutput, journal: Map<string, ToolOutput | "started">) {
  const seen: Array<{ url: string; journalled: ToolOutput | "started" | undefined }> = [];
  const tools: ToolHost = {
    list: async () => [READ],
    call: async (_name, args) => {
      const url = String(args.url);
      seen.push({ url, journalled: journal.get(keyOf(url)) });
      return answer(url);
    },
  };
  return { tools, seen };
}

function executor(
  tools: ToolHost,
  journal: Map<string, ToolOutput | "started">,
  remembered: ReadonlyMap<string, ToolOutput | "started"> = new Map(),
) {
  return new ToolExecutor({
    host: tools,
    tools: [READ],
    approvalRequired: [],
    defaultTimeoutMs: 1_000,
    maxResultChars: 10_000,
    now: () => 0,
    remembered,
    onOutput: (key, entry) => {
      if (entry !== "started" && !entry.ok) journal.delete(key);
      else journal.set(key, entry);
    },
  });
}

describe("a turn's journal of tool calls", () => {
  it("journals a call as started before the tool runs, and its output once it returns", async () => {
    const journal = new Map<string, ToolOutput | "started">();
    const { tools, seen } = host(() => ({ ok: true, content: "the page" }), journal);
    const run = await executor(tools, journal).execute(call("https://a.example/"), CONTEXT);
    expect(run.record.ok).toBe(true);
    expect(seen).toEqual([{ url: "https://a.example/", journalled: "started" }]);
    expect(journal.get(keyOf("https://a.example/"))).toEqual({ ok: true, content: "the page" });
  });

  it("clears the start of a call that failed, so a later attempt may try it again", async () => {
    const journal = new Map<string, ToolOutput | "started">();
    const { tools } = host(() => ({ ok: false, error: "answered with HTTP 503" }), journal);
    const run = await executor(tools, journal).execute(call("https://b.example/"), CONTEXT);
    expect(run.record.ok).toBe(false);
    expect(journal.has(keyOf("https://b.example/"))).toBe(false);
  });

  it("refuses, without running it, a call an earlier attempt started and never finished", async () => {
    const journal = new Map<string, ToolOutput | "started">();
    const { tools, seen } = host(() => ({ ok: true, content: "never read" }), journal);
    const remembered = new Map([[keyOf("https://slow.example/"), "started" as const]]);
    const run = await executor(tools, journal, remembered).execute(
      call("https://slow.example/"),
      CONTEXT,
    );
    expect(seen).toEqual([]);
    expect(run.record).toMatchObject({ ok: false, cached: false });
    expect(run.modelContent).toBe(`Error: ${UNFINISHED_CALL_ERROR}`);
    expect(UNFINISHED_CALL_ERROR).toContain(
      "started in an earlier attempt of the turn that did not finish",
    );
  });

  it("still replays what an earlier attempt finished, and runs calls it never began", async () => {
    const journal = new Map<string, ToolOutput | "started">();
    const { tools, seen } = host((url) => ({ ok: true, content: `fresh ${url}` }), journal);
    const remembered = new Map<string, ToolOutput | "started">([
      [keyOf("https://done.example/"), { ok: true, content: "from the journal" }],
    ]);
    const run = executor(tools, journal, remembered);
    const replayed = await run.execute(call("https://done.example/"), CONTEXT);
    expect(replayed.record).toMatchObject({ ok: true, cached: true });
    expect(replayed.modelContent).toBe("from the journal");
    const fresh = await run.execute(call("https://new.example/"), CONTEXT);
    expect(fresh.modelContent).toBe("fresh https://new.example/");
    expect(seen.map((s) => s.url)).toEqual(["https://new.example/"]);
  });
});
