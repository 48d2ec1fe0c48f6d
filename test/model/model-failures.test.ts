import { describe, expect, it } from "vitest";
import { api, createTestAgent, json, useModelStandIn } from "../helpers/api.ts";
import { roles } from "../helpers/model-messages.ts";

const model = useModelStandIn();

const FAILOVER_NOTE_START = "Note: a different model started on this request";

async function say(agentId: string, text: string) {
  const response = await api("POST", `/agents/${agentId}/messages`, {
    body: { userId: "bob", text },
  });
  return { response, body: await json<Record<string, unknown>>(response) };
}

describe("model failures", () => {
  it("retries a model 500 and answers once it succeeds", async () => {
    const agentId = await createTestAgent();
    model.script({ status: 500 }, { text: "Back on my feet." });
    const { response, body } = await say(agentId, "Are you there?");
    expect(response.status).toBe(200);
    expect(body.reply).toEqual({ text: "Back on my feet." });
    expect(model.calls.map((c) => c.model)).toEqual(["test-primary", "test-primary"]);
    // The client retried; the turn itself counts one model call.
    expect(body.usage).toMatchObject({ modelCalls: 1 });
  });

  it("honours a 429's Retry-After before retrying", async () => {
    const agentId = await createTestAgent();
    model.script({ status: 429, headers: { "retry-after": "1" } }, { text: "Sorry for the wait." });
    const started = Date.now();
    const { body } = await say(agentId, "Hello?");
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(body.reply).toEqual({ text: "Sorry for the wait." });
  });

  it("fails over to MODEL_FALLBACKS when the primary is down, dropping the primary's tool chain", async () => {
    const agentId = await createTestAgent();
    let primaryCalls = 0;
    model.respondWith((call) => {
      if (call.model === "test-primary") {
        primaryCalls += 1;
        // First round works and asks for a tool; after that the primary is down (retry-after 0 keeps the test fast).
        if (primaryCalls === 1)
          return {
            toolCalls: [{ name: "remember", arguments: { fact: "Bob is testing failover" } }],
          };
        return { status: 503, headers: { "retry-after": "0" } };
      }
      return { text: "Fallback here: noted." };
    });
    const { response, body } = await say(agentId, "Remember that I am testing failover");
    expect(response.status).toBe(200);
    expect(body.reply).toEqual({ text: "Fallback here: noted." });
    expect(body.model).toBe("test-fallback");
    const fallbackCalls = model.callsFor("test-fallback");
    expect(fallbackCalls).toHaveLength(1);
    const seen = fallbackCalls[0]!;
    // Only system + the person's message + the note: no assistant tool_calls, no tool results.
    expect(roles(seen)).toEqual(["system", "user", "system"]);
    // The person's message goes over with its context block (the fallback needs it too).
    expect(String(seen.messages[1]!.content)).toMatch(
      /^Remember that I am testing failover\n\n<context>\n[\s\S]*\n<\/context>$/,
    );
    expect(String(seen.messages[2]!.content)).toContain(FAILOVER_NOTE_START);
    expect(JSON.stringify(seen.messages)).not.toContain("tool_calls");
  });

  it("answers 502 with a clear message when every model fails", async () => {
    const agentId = await createTestAgent();
    model.respondWith(() => ({ status: 503, headers: { "retry-after": "0" } }));
    const { response, body } = await say(agentId, "Anyone?");
    expect(response.status).toBe(502);
    expect(body.error).toMatchObject({ code: "model" });
    expect(String((body.error as { message: string }).message)).toContain("test-fallback");
    // The message was stored even though nobody could answer it; the history says why.
    const history = await json<{
      messages: { role: string; text: string; turn?: { error?: { code: string } } }[];
    }>(await api("GET", `/agents/${agentId}/rooms/user:bob/messages`));
    expect(history.messages.map((m) => [m.role, m.text, m.turn?.error?.code])).toEqual([
      ["agent", "", "model"],
      ["user", "Anyone?", undefined],
    ]);
  });

  it("does not fail over on an authentication error, and never echoes the key", async () => {
    const agentId = await createTestAgent();
    model.respondWith(() => ({
      status: 401,
      body: { error: { message: "Incorrect API key provided: sk-test-not-a-real-key" } },
    }));
    const { response, body } = await say(agentId, "Hi");
    expect(response.status).toBe(502);
    expect(model.callsFor("test-fallback")).toHaveLength(0);
    expect(JSON.stringify(body)).not.toContain("sk-test-not-a-real-key");
    expect(JSON.stringify(body)).toContain("OPENAI_API_KEY");
  });

  it("retries malformed model output instead of trusting it", async () => {
    const agentId = await createTestAgent();
    model.script({ malformed: "non-string-content" }, { text: "Proper answer." });
    const { body } = await say(agentId, "Hi");
    expect(body.reply).toEqual({ text: "Proper answer." });
    expect(model.calls).toHaveLength(2);
  });
});
