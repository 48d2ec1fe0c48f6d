// Discord's REST API as a fetch handler for tests and benchmarks: records every request the bot
// makes (edits of the deferred response, follow-ups, channel messages) and answers 200, or a
// scripted failure (429 with retry_after, 5xx, 404) for the next requests.

export interface DiscordCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  at: number;
}

export interface DiscordFailure {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface DiscordStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** The next requests fail like this, in order. */
  failNext(...failures: DiscordFailure[]): void;
  /** Successful requests only. */
  readonly calls: readonly DiscordCall[];
  /** Every request, failed ones included. */
  readonly attempts: readonly DiscordCall[];
  /** Resolves once `count` requests have succeeded. */
  waitForCalls(count: number, timeoutMs?: number): Promise<DiscordCall[]>;
  reset(): void;
}

export function createDiscordStandIn(): DiscordStandIn {
  let calls: DiscordCall[] = [];
  let attempts: DiscordCall[] = [];
  let failures: DiscordFailure[] = [];
  let waiters: Array<() => void> = [];
  let nextId = 1;

  const standIn: DiscordStandIn = {
    async fetch(input, init) {
      const request = input instanceof Request && init === undefined ? input : new Request(input, init);
      const url = new URL(request.url);
      const text = await request.text();
      const call: DiscordCall = {
        method: request.method,
        path: url.pathname,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
        headers: Object.fromEntries([...request.headers].map(([k, v]) => [k.toLowerCase(), v])),
        at: Date.now(),
      };
      attempts.push(call);
      const failure = failures.shift();
      if (failure) {
        return new Response(JSON.stringify(failure.body ?? { message: `stand-in failure ${failure.status}`, code: 0 }), {
          status: failure.status,
          headers: { "content-type": "application/json", ...failure.headers },
        });
      }
      calls.push(call);
      for (const wake of waiters) wake();
      return Response.json({ id: String(nextId++), content: call.body.content ?? "" });
    },
    failNext(...more) {
      failures.push(...more);
    },
    get calls() {
      return calls;
    },
    get attempts() {
      return attempts;
    },
    waitForCalls(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`expected ${count} Discord calls, saw ${calls.length}`)), timeoutMs);
        const check = () => {
          if (calls.length >= count) {
            clearTimeout(timer);
            waiters = waiters.filter((w) => w !== check);
            resolve(calls.slice());
          }
        };
        waiters.push(check);
        check();
      });
    },
    reset() {
      calls = [];
      attempts = [];
      failures = [];
      waiters = [];
    },
  };
  return standIn;
}
