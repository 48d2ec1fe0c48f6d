// The one retrying caller for outside APIs (src/net/retrying-call.ts), in plain Node: a scripted
// fetch, an injected sleep that records each wait, a fixed clock and random(). The platforms'
// own rules are held by their clients' tests (test/clients/, test/surfaces/discord/).
import { describe, expect, it } from "vitest";
import { type RetryLoopOptions, resolveRetryPolicy } from "../../src/runtime/util/retry.ts";
import { type ApiAdapter, retryingCall } from "../../src/net/retrying-call.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");

interface Refusal {
  status: number;
  body: string;
}

/** A scripted API: answers in order (the last one repeats), each request recorded. */
function script(...answers: Array<Response | Error>) {
  const sent: number[] = [];
  const send = async (): Promise<Response> => {
    const answer = answers[Math.min(sent.length, answers.length - 1)]!;
    sent.push(sent.length + 1);
    if (answer instanceof Error) throw answer;
    return answer.clone();
  };
  return { send, sent };
}

/** A platform that says `{ok: false, retry_in}` in its JSON, like Telegram's `retry_after`. */
const jsonAdapter: ApiAdapter<string, Refusal> = {
  async read(response) {
    const body = await response.text();
    if (response.ok && !body.includes("busy")) return { ok: true, value: body };
    const parsed = safeJson(body) as { retry_in?: number };
    return {
      ok: false,
      failure: { status: response.status, body },
      ...(typeof parsed?.retry_in === "number" ? { retryAfterMs: parsed.retry_in * 1000 } : {}),
      retryable: body.includes("busy"),
    };
  },
  unreachable: () => ({ status: 0, body: "unreachable" }),
};

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function options(overrides: Partial<RetryLoopOptions> = {}) {
  const slept: number[] = [];
  return {
    slept,
    options: {
      policy: resolveRetryPolicy({ maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 8_000 }),
      sleep: async (ms: number) => {
        slept.push(ms);
      },
      random: () => 0.5,
      now: () => NOW,
      ...overrides,
    },
  };
}

const ok = () => new Response("done", { status: 200 });

describe("Retrying caller: 429 (RFC 6585 §4) waits what the platform asked", () => {
  it("waits a Retry-After in seconds, then sends again", async () => {
    const api = script(new Response("", { status: 429, headers: { "retry-after": "3" } }), ok());
    const { options: o, slept } = options();
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toEqual({ ok: true, value: "done", attempts: 2 });
    expect(slept).toEqual([3_000]);
  });

  it("reads Retry-After as an HTTP-date against the injected clock (RFC 9110 §10.2.3)", async () => {
    const at = new Date(NOW + 4_000).toUTCString();
    const api = script(new Response("", { status: 429, headers: { "retry-after": at } }), ok());
    const { options: o, slept } = options();
    await retryingCall(api.send, jsonAdapter, o);
    expect(slept).toEqual([4_000]);
  });

  it("prefers the wait the platform put in its body over the header", async () => {
    const api = script(
      new Response(JSON.stringify({ retry_in: 2 }), {
        status: 429,
        headers: { "retry-after": "9" },
      }),
      ok(),
    );
    const { options: o, slept } = options();
    await retryingCall(api.send, jsonAdapter, o);
    expect(slept).toEqual([2_000]);
  });

  it("waits a second when a 429 names no wait", async () => {
    const api = script(new Response("", { status: 429 }), ok());
    const { options: o, slept } = options();
    await retryingCall(api.send, jsonAdapter, o);
    expect(slept).toEqual([1_000]);
  });

  it("gives a wait past 30 s back to the caller without sleeping", async () => {
    const api = script(new Response("", { status: 429, headers: { "retry-after": "45" } }));
    const { options: o, slept } = options();
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toMatchObject({ ok: false, attempts: 1, tooLongWaitMs: 45_000 });
    expect(slept).toEqual([]);
    expect(api.sent).toHaveLength(1);
  });

  it("asks again at once when the platform's wait is 0 (a limiter holds it)", async () => {
    const adapter: ApiAdapter<string, Refusal> = {
      ...jsonAdapter,
      async read(response) {
        if (response.status !== 429) return jsonAdapter.read(response);
        return { ok: false, failure: { status: 429, body: "" }, retryAfterMs: 0 };
      },
    };
    const api = script(new Response("", { status: 429 }), ok());
    const { options: o, slept } = options();
    const result = await retryingCall(api.send, adapter, o);
    expect(result).toMatchObject({ ok: true, attempts: 2 });
    expect(slept).toEqual([]);
  });
});

describe("Retrying caller: 5xx and no answer back off with full jitter", () => {
  it("backs off on a 502 and on a dropped connection, then succeeds", async () => {
    const api = script(new Response("bad gateway", { status: 502 }), new TypeError("reset"), ok());
    const { options: o, slept } = options();
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toMatchObject({ ok: true, attempts: 3 });
    // random() = 0.5: half of 500 ms, then half of 1,000 ms.
    expect(slept).toEqual([250, 500]);
  });

  it("backs off on the platform's own retryable refusal in a 200", async () => {
    const api = script(new Response("busy", { status: 200 }), ok());
    const { options: o, slept } = options();
    expect(await retryingCall(api.send, jsonAdapter, o)).toMatchObject({ ok: true });
    expect(slept).toEqual([250]);
  });

  it("stops after maxAttempts with the last failure, and does not sleep after it", async () => {
    const api = script(new Response("down", { status: 503 }));
    const { options: o, slept } = options({ policy: resolveRetryPolicy({ maxAttempts: 3 }) });
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toEqual({ ok: false, failure: { status: 503, body: "down" }, attempts: 3 });
    expect(slept).toEqual([250, 500]);
  });

  it("the failure of no answer is the adapter's own (never the network's words)", async () => {
    const api = script(new TypeError("connect to https://secret@example failed"));
    const { options: o } = options({ policy: resolveRetryPolicy({ maxAttempts: 2 }) });
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toMatchObject({ ok: false, failure: { status: 0, body: "unreachable" } });
  });
});

describe("Retrying caller: other 4xx are final", () => {
  it("returns a 400 at once: one request, no sleep", async () => {
    const api = script(new Response("bad request", { status: 400 }), ok());
    const { options: o, slept } = options();
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toEqual({
      ok: false,
      failure: { status: 400, body: "bad request" },
      attempts: 1,
    });
    expect(api.sent).toHaveLength(1);
    expect(slept).toEqual([]);
  });

  it("a failure from `before` ends the call without sending", async () => {
    const api = script(ok());
    const { options: o } = options();
    const adapter = { ...jsonAdapter, before: async () => ({ status: 429, body: "paced" }) };
    const result = await retryingCall(api.send, adapter, o);
    expect(result).toMatchObject({ ok: false, failure: { body: "paced" }, attempts: 1 });
    expect(api.sent).toHaveLength(0);
  });
});

describe("Retrying caller: bounded in total", () => {
  it("ends the call when the next wait would pass the total budget", async () => {
    const api = script(new Response("", { status: 429, headers: { "retry-after": "20" } }));
    const { options: o, slept } = options({ maxTotalWaitMs: 50_000 });
    const result = await retryingCall(api.send, jsonAdapter, o);
    expect(result).toMatchObject({ ok: false, attempts: 3 });
    expect(result).not.toHaveProperty("tooLongWaitMs");
    expect(slept).toEqual([20_000, 20_000]);
  });
});
