// Calls the worker the way a client would (through its fetch handler, with the admin token), and
// wires the scripted model stand-in in place of the model API behind globalThis.fetch.
import { exports } from "cloudflare:workers";
import { afterEach, expect, vi } from "vitest";
import { createOpenAIStandIn, type OpenAIStandIn } from "../stand-ins/openai-stand-in.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";
export const MODEL_HOST = "model.test";

export interface ApiOptions {
  body?: unknown;
  headers?: Record<string, string>;
  token?: string | null;
}

export async function api(
  method: string,
  path: string,
  options: ApiOptions = {},
): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== null) headers.authorization = `Bearer ${options.token ?? ADMIN_TOKEN}`;
  let body: string | FormData | undefined;
  if (options.body instanceof FormData) {
    // fetch sets the multipart content type with its boundary.
    body = options.body;
  } else if (options.body !== undefined) {
    body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  return exports.default.fetch(
    new Request(`https://agents.test${path}`, { method, headers, body }),
  );
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

/** The model API stand-in, reached by the worker and its Durable Objects through globalThis.fetch. */
export function useModelStandIn(): OpenAIStandIn {
  const standIn = createOpenAIStandIn();
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.host === MODEL_HOST) return standIn.fetch(input, init);
    return realFetch(input, init);
  });
  afterEach(() => {
    standIn.reset();
  });
  return standIn;
}

let agentCounter = 0;

/** A fresh agent for one test, so tests do not share rooms or memories. */
export async function createTestAgent(overrides: Record<string, unknown> = {}): Promise<string> {
  agentCounter += 1;
  const id = `agent-${Date.now().toString(36)}-${agentCounter}`;
  const response = await api("POST", "/agents", {
    body: {
      id,
      name: "Testa",
      bio: ["A test agent."],
      system: "You are Testa, a test agent.",
      ...overrides,
    },
  });
  if (response.status !== 201)
    throw new Error(`creating a test agent failed: ${response.status} ${await response.text()}`);
  return id;
}

/** Mints an API token with the admin token (`POST /auth/tokens`); throws unless it is created. */
export async function mintToken(
  body: Record<string, unknown>,
): Promise<{ id: string; token: string }> {
  const response = await api("POST", "/auth/tokens", { body });
  if (response.status !== 201)
    throw new Error(`minting failed: ${response.status} ${await response.text()}`);
  return json<{ id: string; token: string }>(response);
}

/** A 403 `forbidden` whose message mentions `mentions`. */
export async function expectForbidden(response: Response, mentions: string): Promise<void> {
  expect(response.status).toBe(403);
  const problem = await json<{ error: { code: string; message: string } }>(response);
  expect(problem.error.code).toBe("forbidden");
  expect(problem.error.message).toContain(mentions);
}
