// Security issue 38, hole 5: a tool call that takes the room down (a page whose parse exceeds the
// CPU limit, which no timeout can stop) ran again on each of the turn's next attempts, so one bad
// URL cost three 30 s kills. The room journals each call as it starts; a later attempt refuses a
// call that started and never finished, and tells the model why. Journal rows written before the
// start was journalled (version 1) still read.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, it, vi } from "vitest";
import { TurnJournal } from "../../src/objects/conversation/turn-journal.ts";
import { toolCallKey } from "../../src/runtime/turn/tool-executor.ts";
import { api, createTestAgent, useModelStandIn } from "../helpers/api.ts";

const model = useModelStandIn();
const web = inject("webPeers");
const NOT_RUN_AGAIN =
  "Error: this call was started in an earlier attempt of the turn that did not finish (it may have exceeded the CPU limit); it is not run again";

describe("a tool call killed mid-call is not run again (issue 38, hole 5)", () => {
  it("refuses on the turn's next attempt the read_url call the room died in, and the model is told", async () => {
    const agentId = await createTestAgent({ plugins: ["web"] });
    const roomId = "killed-mid-call";
    const roomName = `${agentId}:${roomId}`;
    const room = () => env.ROOMS.getByName(roomName);
    let state: DurableObjectState | undefined;
    await runInDurableObject(room(), (_instance, captured) => {
      state = captured;
    });
    const page = `${web.baseUrl}/article`;

    // The page arrives, and the room dies reading it, as a parse past the CPU limit would end it.
    const fetchSpy = vi.mocked(globalThis.fetch);
    const routed = fetchSpy.getMockImplementation()!;
    let pageFetches = 0;
    fetchSpy.mockImplementation(async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (!url.startsWith(page)) return routed(input, init);
      pageFetches += 1;
      await (await routed(input, init)).arrayBuffer();
      state!.abort("simulated CPU-limit kill while read_url parses the page");
      return new Promise<Response>(() => {});
    });
    model.respondWith((call) => {
      if (call.model !== "test-primary") return { text: "ok" };
      const last = call.messages.at(-1);
      if (last?.role !== "tool")
        return { toolCalls: [{ name: "read_url", arguments: { url: page } }] };
      return { text: "That page could not be read." };
    });
    try {
      const cut = await api("POST", `/agents/${agentId}/messages`, {
        body: { userId: "carol", text: "read this page", roomId },
      });
      expect(cut.status).toBe(503);
      // The journal's alarm runs the turn again; the model asks for the same call.
      expect(await runDurableObjectAlarm(room())).toBe(true);
      expect(pageFetches).toBe(1);
      // Done when the turn is stored and evaluated (its reply is then in the journal).
      await vi.waitFor(
        async () =>
          expect(
            await runInDurableObject(room(), (_instance, captured) =>
              captured.storage.sql
                .exec<{ status: string }>("SELECT status FROM turn_journal")
                .toArray()
                .map((row) => row.status),
            ),
          ).toEqual(["evaluated"]),
        { timeout: 15_000, interval: 50 },
      );
    } finally {
      fetchSpy.mockImplementation(routed);
    }

    expect(pageFetches).toBe(1);
    const told = model
      .callsFor("test-primary")
      .at(-1)!
      .messages.filter((message) => message.role === "tool")
      .map((message) => String(message.content));
    expect(told.at(-1)).toContain(NOT_RUN_AGAIN);
    const turn = await runInDurableObject(room(), (_instance, captured) => {
      const journal = new TurnJournal(captured.storage.sql);
      const row = captured.storage.sql
        .exec<{ turn_id: string }>("SELECT turn_id FROM turn_journal ORDER BY seq DESC LIMIT 1")
        .one();
      const left = captured.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM turn_tool_outputs")
        .one().n;
      return { entry: journal.byTurnId(row.turn_id), left };
    });
    expect(turn.entry?.attempts).toBe(2);
    expect(turn.entry?.outcome?.reply?.text).toBe("That page could not be read.");
    expect(turn.entry?.outcome?.toolCalls).toMatchObject([
      { name: "read_url", ok: false, output: NOT_RUN_AGAIN },
    ]);
    // The journal of calls is kept only while the turn runs.
    expect(turn.left).toBe(0);
  });
});

describe("the journal of a turn's tool calls reads every version it has written", () => {
  it("reads version 1 rows (a bare output) and version 2 rows (started, finished)", async () => {
    const agentId = await createTestAgent();
    const key = (url: string) => toolCallKey("read_url", { url });
    const read = await runInDurableObject(
      env.ROOMS.getByName(`${agentId}:versions`),
      (_instance, captured) => {
        const journal = new TurnJournal(captured.storage.sql);
        journal.migrate();
        const rows: Array<[string, string]> = [
          // Version 1, written before calls were journalled as they start.
          [key("https://v1.example/"), '{"ok":true,"content":"a page read before the deploy"}'],
          [key("https://v2-started.example/"), '{"v":2,"call":"started"}'],
          [
            key("https://v2-finished.example/"),
            '{"v":2,"call":"finished","output":{"ok":true,"content":"a page read after it"}}',
          ],
          // Unreadable (a version this code does not know): that call only runs again.
          [key("https://v9.example/"), '{"v":9,"call":"paused"}'],
        ];
        for (const [callKey, output] of rows)
          captured.storage.sql.exec(
            "INSERT INTO turn_tool_outputs (turn_id, call_key, output) VALUES ('turn-v', ?, ?)",
            callKey,
            output,
          );
        return [...journal.toolOutputs("turn-v").entries()];
      },
    );
    expect(new Map(read)).toEqual(
      new Map<string, unknown>([
        [key("https://v1.example/"), { ok: true, content: "a page read before the deploy" }],
        [key("https://v2-started.example/"), "started"],
        [key("https://v2-finished.example/"), { ok: true, content: "a page read after it" }],
      ]),
    );
  });

  it("writes a start, then the output over it, and clears a failure", async () => {
    const agentId = await createTestAgent();
    const key = toolCallKey("read_url", { url: "https://a.example/" });
    const stored = await runInDurableObject(
      env.ROOMS.getByName(`${agentId}:writes`),
      (_instance, captured) => {
        const journal = new TurnJournal(captured.storage.sql);
        journal.migrate();
        const output = () =>
          captured.storage.sql
            .exec<{ output: string }>(
              "SELECT output FROM turn_tool_outputs WHERE turn_id = 'turn-w' AND call_key = ?",
              key,
            )
            .toArray()
            .map((row) => JSON.parse(row.output) as unknown);
        journal.recordToolOutput("turn-w", key, "started");
        const started = output();
        journal.recordToolOutput("turn-w", key, { ok: true, content: "the page" });
        const finished = output();
        journal.recordToolOutput("turn-w", key, { ok: false, error: "HTTP 503" });
        return { started, finished, failed: output() };
      },
    );
    expect(stored).toEqual({
      started: [{ v: 2, call: "started" }],
      finished: [{ v: 2, call: "finished", output: { ok: true, content: "the page" } }],
      failed: [],
    });
  });
});
