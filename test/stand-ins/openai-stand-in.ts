// A scripted OpenAI-compatible Chat Completions server as a plain fetch handler. Tests inject it
// (client `fetch` option or vi.spyOn(globalThis, "fetch")); benchmarks mount it on a Node http
// server. Only standard Request/Response here, no vitest or Node imports, so both can load it.
// Steps are consumed in order; a step with `model` waits for a request naming that model.

export interface StandInUsage {
  promptTokens?: number;
  completionTokens?: number;
  /** Reported as `prompt_tokens_details.cached_tokens` (OpenAI's prompt cache); absent: not sent. */
  cachedTokens?: number;
}

export interface StandInToolCall {
  name: string;
  /** An object is sent as JSON text; a string is sent as is (so tests can send broken JSON). */
  arguments: unknown;
  id?: string;
}

/** What a malformed 200 looks like; `true` means "no-choices". */
export type MalformedKind = "no-choices" | "not-json" | "non-string-content" | "nameless-tool-call";

interface StepCommon {
  /** Only requests for this model consume the step. */
  model?: string;
  usage?: StandInUsage;
  /** Simulated latency before answering (aborts with the request). */
  delayMs?: number;
  /** With `stream: true`: the pause between streamed chunks (default: the stand-in's option). */
  chunkDelayMs?: number;
}

export type StandInStep =
  | (StepCommon & { text: string })
  | (StepCommon & { toolCalls: StandInToolCall[]; text?: string })
  | (StepCommon & { status: number; body?: unknown; headers?: Record<string, string> })
  | (StepCommon & { malformed: true | MalformedKind })
  | (StepCommon & { hang: true });

export interface StandInCall {
  model: string;
  messages: Record<string, unknown>[];
  tools: Record<string, unknown>[] | undefined;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** The whole parsed request body (temperature, max_completion_tokens, ...). */
  body: Record<string, unknown>;
  /** The body's `prompt_cache_key`, when it had one. */
  promptCacheKey: string | undefined;
}

export type StandInResponder = (call: StandInCall) => StandInStep | Promise<StandInStep>;

export interface OpenAIStandInOptions {
  /** Added before every answer, for benchmarks that want a model-like delay. */
  latencyMs?: number;
  /** With `stream: true`: the pause between streamed chunks, for a model that writes at a fixed rate. */
  chunkDelayMs?: number;
  respondWith?: StandInResponder;
}

export interface OpenAIStandIn {
  fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response>;
  /** Queues steps; returns the stand-in for chaining. */
  script(...steps: StandInStep[]): OpenAIStandIn;
  /** The answer when no scripted step matches (default: `{ text: "ok" }`). */
  respondWith(responder: StandInResponder): void;
  /** Every request for `model` fails with `status` until `restoreModel`. */
  failModel(model: string, status: number): void;
  restoreModel(model: string): void;
  readonly calls: readonly StandInCall[];
  callsFor(model: string): StandInCall[];
  /** Scripted steps not consumed yet. */
  readonly pendingSteps: number;
  /** Requests currently held by a `hang` step. */
  readonly hangingCount: number;
  /** Resolves once at least one request is hanging. */
  waitForHang(): Promise<void>;
  /** Answers every hanging request with `step` (default: the responder); returns how many. */
  releaseHung(step?: StandInStep): number;
  /** Forgets steps, calls, failures and the responder (and the transcriptions). */
  reset(): void;
  /** Every `POST /audio/transcriptions`, in order. */
  readonly transcriptions: readonly StandInTranscription[];
  /** What the next transcriptions answer: a transcript, or an HTTP failure (default "hello"). */
  transcribeWith(answer: { text: string } | { status: number }): void;
}

export interface StandInTranscription {
  model: string;
  filename: string;
  contentType: string;
  bytes: Uint8Array;
  /** Lower-cased header names. */
  headers: Record<string, string>;
}

const DEFAULT_RESPONDER: StandInResponder = () => ({ text: "ok" });

export function createOpenAIStandIn(options: OpenAIStandInOptions = {}): OpenAIStandIn {
  let steps: StandInStep[] = [];
  let calls: StandInCall[] = [];
  let responder = options.respondWith ?? DEFAULT_RESPONDER;
  const failedModels = new Map<string, number>();
  const hung = new Set<(step: StandInStep | undefined) => void>();
  let hangWaiters: (() => void)[] = [];
  let sequence = 0;
  let transcriptions: StandInTranscription[] = [];
  let transcription: { text: string } | { status: number } = { text: "hello" };

  /** Whisper's `/audio/transcriptions`: multipart with `file` and `model`, answered as JSON. */
  async function transcribe(request: Request): Promise<Response> {
    let form: FormData;
    try {
      form = await request.formData();
    } catch {
      return errorResponse(400, "expected a multipart body", "invalid_request_error");
    }
    const file = form.get("file");
    const model = form.get("model");
    if (!(file instanceof File) || typeof model !== "string")
      return errorResponse(400, "file and model are required", "invalid_request_error");
    transcriptions.push({
      model,
      filename: file.name,
      contentType: file.type,
      bytes: new Uint8Array(await file.arrayBuffer()),
      headers: Object.fromEntries(request.headers),
    });
    if ("status" in transcription)
      return errorResponse(transcription.status, `scripted HTTP ${transcription.status}`);
    return json(200, { text: transcription.text });
  }

  function takeStep(model: string): StandInStep | undefined {
    const index = steps.findIndex((step) => step.model === undefined || step.model === model);
    if (index < 0) return undefined;
    return steps.splice(index, 1)[0];
  }

  function hangUntilReleased(signal: AbortSignal | undefined): Promise<StandInStep | undefined> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const release = (step: StandInStep | undefined): void => {
        signal?.removeEventListener("abort", onAbort);
        resolve(step);
      };
      const onAbort = (): void => {
        hung.delete(release);
        reject(abortReason(signal));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      hung.add(release);
      for (const wake of hangWaiters) wake();
      hangWaiters = [];
    });
  }

  async function handle(request: Request, signal: AbortSignal | undefined): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname.endsWith("/audio/transcriptions"))
      return transcribe(request);
    if (request.method !== "POST" || !url.pathname.endsWith("/chat/completions")) {
      return errorResponse(
        404,
        `no route for ${request.method} ${url.pathname}`,
        "invalid_request_error",
      );
    }
    let body: Record<string, unknown>;
    try {
      const parsed: unknown = await request.json();
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
        throw new TypeError("not an object");
      body = parsed as Record<string, unknown>;
    } catch {
      return errorResponse(400, "request body is not a JSON object", "invalid_request_error");
    }
    const call: StandInCall = {
      model: typeof body.model === "string" ? body.model : "",
      messages: Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [],
      tools: Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : undefined,
      headers: Object.fromEntries(
        [...request.headers.entries()].map(([k, v]) => [k.toLowerCase(), v]),
      ),
      body,
      promptCacheKey: typeof body.prompt_cache_key === "string" ? body.prompt_cache_key : undefined,
    };
    calls.push(call);

    const failStatus = failedModels.get(call.model);
    if (failStatus !== undefined)
      return errorResponse(failStatus, `model ${call.model} is down (stand-in)`);
    let step = takeStep(call.model) ?? (await responder(call));
    if ("hang" in step) step = (await hangUntilReleased(signal)) ?? (await responder(call));
    const delayMs = (options.latencyMs ?? 0) + (step.delayMs ?? 0);
    if (delayMs > 0) await sleep(delayMs, signal);
    if (body.stream === true)
      return streamAnswer(
        step,
        call,
        ++sequence,
        step.chunkDelayMs ?? options.chunkDelayMs ?? 0,
        signal,
      );
    return answer(step, call, ++sequence);
  }

  const standIn: OpenAIStandIn = {
    fetch: (input, init) => {
      const request =
        input instanceof Request && init === undefined ? input : new Request(input, init);
      const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
      return handle(request, signal ?? undefined);
    },
    script(...more) {
      steps.push(...more);
      return standIn;
    },
    respondWith(next) {
      responder = next;
    },
    failModel(model, status) {
      failedModels.set(model, status);
    },
    restoreModel(model) {
      failedModels.delete(model);
    },
    get calls() {
      return calls;
    },
    callsFor(model) {
      return calls.filter((call) => call.model === model);
    },
    get pendingSteps() {
      return steps.length;
    },
    get hangingCount() {
      return hung.size;
    },
    waitForHang() {
      if (hung.size > 0) return Promise.resolve();
      return new Promise<void>((resolve) => hangWaiters.push(resolve));
    },
    releaseHung(step) {
      const releases = [...hung];
      hung.clear();
      for (const release of releases) release(step);
      return releases.length;
    },
    reset() {
      steps = [];
      calls = [];
      responder = options.respondWith ?? DEFAULT_RESPONDER;
      failedModels.clear();
      transcriptions = [];
      transcription = { text: "hello" };
    },
    get transcriptions() {
      return transcriptions;
    },
    transcribeWith(next) {
      transcription = next;
    },
  };
  return standIn;
}

function answer(step: StandInStep, call: StandInCall, sequence: number): Response {
  if ("status" in step) {
    const headers = {
      "content-type": "application/json",
      "x-request-id": `req_standin_${sequence}`,
      ...step.headers,
    };
    const body =
      step.body === undefined ? errorBody(step.status, `scripted HTTP ${step.status}`) : step.body;
    return new Response(typeof body === "string" ? body : JSON.stringify(body), {
      status: step.status,
      headers,
    });
  }
  const envelope = {
    id: `chatcmpl-standin-${sequence}`,
    object: "chat.completion",
    created: 1_700_000_000 + sequence,
    model: call.model,
  };
  if ("malformed" in step)
    return malformedResponse(step.malformed === true ? "no-choices" : step.malformed, envelope);
  if ("hang" in step) return errorResponse(500, "a hang step cannot be a reply");
  const toolCalls =
    "toolCalls" in step
      ? step.toolCalls.map((toolCall, index) => ({
          id:
            toolCall.id ?? `call_${sequence.toString(36)}${String.fromCharCode(97 + (index % 26))}`,
          type: "function",
          function: {
            name: toolCall.name,
            arguments:
              typeof toolCall.arguments === "string"
                ? toolCall.arguments
                : JSON.stringify(toolCall.arguments),
          },
        }))
      : [];
  const content = step.text ?? null;
  const message =
    toolCalls.length > 0
      ? { role: "assistant", content, refusal: null, tool_calls: toolCalls }
      : { role: "assistant", content, refusal: null };
  // Rough token counts (4 characters a token) so benchmarks see usage that grows with input.
  const promptTokens =
    step.usage?.promptTokens ?? Math.ceil(JSON.stringify(call.messages).length / 4);
  const completionTokens =
    step.usage?.completionTokens ?? Math.ceil(JSON.stringify([content, toolCalls]).length / 4);
  return json(200, {
    ...envelope,
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop",
      },
    ],
    usage: usageBody(promptTokens, completionTokens, step.usage?.cachedTokens),
  });
}

/** OpenAI's usage object; `prompt_tokens_details` only when the step reports cached tokens. */
function usageBody(promptTokens: number, completionTokens: number, cachedTokens?: number) {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(cachedTokens === undefined
      ? {}
      : { prompt_tokens_details: { cached_tokens: cachedTokens } }),
  };
}

/**
 * The same answer as `answer`, as Chat Completions stream chunks (server-sent events): the text a
 * word at a time, each tool call's id and name first and its arguments in two pieces, then the
 * finish reason, then usage in a chunk without choices (as `stream_options.include_usage` asks).
 */
function streamAnswer(
  step: StandInStep,
  call: StandInCall,
  sequence: number,
  chunkDelayMs: number,
  signal: AbortSignal | undefined,
): Response {
  if ("status" in step || "hang" in step) return answer(step, call, sequence);
  const envelope = {
    id: `chatcmpl-standin-${sequence}`,
    object: "chat.completion.chunk",
    created: 1_700_000_000 + sequence,
    model: call.model,
  };
  const chunks: unknown[] = [];
  const choice = (delta: Record<string, unknown>, finish: string | null = null) => ({
    ...envelope,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  if ("malformed" in step) {
    chunks.push({
      ...envelope,
      choices: [{ index: 0, delta: { content: 42 }, finish_reason: null }],
    });
  } else {
    chunks.push(choice({ role: "assistant", content: "" }));
    for (const piece of (step.text ?? "").match(/\S*\s*/g)?.filter(Boolean) ?? [])
      chunks.push(choice({ content: piece }));
    const toolCalls = "toolCalls" in step ? step.toolCalls : [];
    toolCalls.forEach((toolCall, index) => {
      const args =
        typeof toolCall.arguments === "string"
          ? toolCall.arguments
          : JSON.stringify(toolCall.arguments);
      const id =
        toolCall.id ?? `call_${sequence.toString(36)}${String.fromCharCode(97 + (index % 26))}`;
      const half = Math.ceil(args.length / 2);
      chunks.push(
        choice({
          tool_calls: [
            {
              index,
              id,
              type: "function",
              function: { name: toolCall.name, arguments: args.slice(0, half) },
            },
          ],
        }),
      );
      chunks.push(choice({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
    });
    chunks.push(choice({}, toolCalls.length > 0 ? "tool_calls" : "stop"));
    const promptTokens =
      step.usage?.promptTokens ?? Math.ceil(JSON.stringify(call.messages).length / 4);
    const completionTokens =
      step.usage?.completionTokens ??
      Math.ceil(JSON.stringify([step.text ?? null, toolCalls]).length / 4);
    chunks.push({
      ...envelope,
      choices: [],
      usage: usageBody(promptTokens, completionTokens, step.usage?.cachedTokens),
    });
  }
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      try {
        for (const [index, chunk] of chunks.entries()) {
          if (index > 0 && chunkDelayMs > 0) await sleep(chunkDelayMs, signal);
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
        }
        controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        controller.close();
      } catch (error) {
        controller.error(error);
      }
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "text/event-stream", "x-request-id": `req_standin_${sequence}` },
  });
}

function malformedResponse(kind: MalformedKind, envelope: Record<string, unknown>): Response {
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  switch (kind) {
    case "no-choices":
      return json(200, { ...envelope, choices: [], usage });
    case "not-json":
      return new Response('{"id": "chatcmpl-trunc', {
        status: 200,
        headers: { "content-type": "application/json" },
      });
    case "non-string-content":
      return json(200, {
        ...envelope,
        choices: [{ index: 0, message: { role: "assistant", content: 42 }, finish_reason: "stop" }],
        usage,
      });
    case "nameless-tool-call": {
      const toolCall = { id: "call_nameless", type: "function", function: { arguments: "{}" } };
      const message = { role: "assistant", content: null, tool_calls: [toolCall] };
      return json(200, {
        ...envelope,
        choices: [{ index: 0, message, finish_reason: "tool_calls" }],
        usage,
      });
    }
  }
}

function errorBody(status: number, message: string, type?: string): unknown {
  const inferred =
    status === 429
      ? "rate_limit_exceeded"
      : status >= 500
        ? "server_error"
        : "invalid_request_error";
  return { error: { message, type: type ?? inferred, param: null, code: null } };
}

function errorResponse(status: number, message: string, type?: string): Response {
  return json(status, errorBody(status, message, type));
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "x-request-id": "req_standin" },
  });
}

function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
