import { afterEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.ts";
import type { Env } from "../../src/env.ts";
import { createEmbedder, describeEmbedder } from "../../src/model/embedder.ts";
import {
  createOpenAIEmbedder,
  type OpenAIEmbedderOptions,
} from "../../src/model/openai-embedder.ts";
import { createWorkersAIEmbedder } from "../../src/model/workers-ai-embedder.ts";
import { EmbeddingError, NotConfiguredError } from "../../src/runtime/util/errors.ts";
import { cosine, createHashEmbedder, stem } from "../../src/runtime/retrieval/hash-embedder.ts";
import { requiredBindings, type RequiredBindings } from "../helpers/bindings.ts";

const API_KEY = "sk-embed-5ecret-never-log-me";

const norm = (v: Float32Array) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));

afterEach(() => {
  vi.restoreAllMocks();
});

describe("hashed local embedder", () => {
  it("identifies itself and defaults to 384 dimensions", () => {
    const embedder = createHashEmbedder();
    expect({
      id: embedder.id,
      kind: embedder.kind,
      dimensions: embedder.dimensions,
      maxBatch: embedder.maxBatch,
    }).toEqual({
      id: "local:hash-v1",
      kind: "local",
      dimensions: 384,
      maxBatch: 1000,
    });
  });

  it("gives the same vector for the same text, in any batch and from any instance", async () => {
    const [a, , b] = await createHashEmbedder().embed([
      "I adopted two puppies last spring",
      "other",
      "I adopted two puppies last spring",
    ]);
    const [c] = await createHashEmbedder().embed(["I adopted two puppies last spring"]);
    expect([...a!]).toEqual([...b!]);
    expect([...a!]).toEqual([...c!]);
    expect(a!.some((x) => x !== 0)).toBe(true);
  });

  it("returns unit vectors without NaN, also for empty, stopword-only and symbol-only text", async () => {
    const texts = ["I adopted two puppies last spring", "", "   ", "the and of", "?!", "🙂", "a"];
    const vectors = await createHashEmbedder().embed(texts);
    expect(vectors).toHaveLength(texts.length);
    for (const v of vectors) {
      expect(v).toHaveLength(384);
      expect(v.every(Number.isFinite)).toBe(true);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
  });

  it("puts a question about adopting puppies closer to the memory than an unrelated sentence", async () => {
    const [memory, puppy, dogs, stocks] = await createHashEmbedder().embed([
      "I adopted two puppies last spring",
      "how many puppy did she adopt",
      "how many dogs did she adopt",
      "the stock market fell sharply on Tuesday",
    ]);
    expect(cosine(memory!, puppy!)).toBeGreaterThan(cosine(memory!, stocks!) + 0.3);
    expect(cosine(memory!, dogs!)).toBeGreaterThan(cosine(memory!, stocks!) + 0.2);
    expect(cosine(memory!, puppy!)).toBeGreaterThan(cosine(memory!, dogs!));
  });

  it("matches inflections, spelling variants and accents that exact words miss", async () => {
    const [synth, variant, other, cafe, accented] = await createHashEmbedder().embed([
      "She plays synthesizers in a band",
      "her synthesiser",
      "her guitar",
      "we met at the cafe for creme brulee",
      "We met at the CAFÉ for crème brûlée!",
    ]);
    expect(cosine(synth!, variant!)).toBeGreaterThan(cosine(synth!, other!) + 0.15);
    expect([...cafe!]).toEqual([...accented!]);
  });

  it("stems common English suffixes lightly", () => {
    const pairs = [
      "adopted",
      "puppies",
      "running",
      "hiking",
      "hike",
      "loved",
      "studying",
      "studied",
      "classes",
      "agreed",
      "agree",
      "dressed",
    ].map((word) => [word, stem(word)]);
    expect(Object.fromEntries(pairs)).toEqual({
      adopted: "adopt",
      puppies: "puppy",
      running: "run",
      hiking: "hik",
      hike: "hik",
      loved: "lov",
      studying: "study",
      studied: "study",
      classes: "class",
      agreed: "agre",
      agree: "agre",
      dressed: "dress",
    });
  });

  it("honours the dimensions option and refuses a nonsensical one", async () => {
    const embedder = createHashEmbedder({ dimensions: 64 });
    const [v] = await embedder.embed(["a small vector"]);
    expect(embedder.dimensions).toBe(64);
    expect(v).toHaveLength(64);
    expect(norm(v!)).toBeCloseTo(1, 5);
    expect(() => createHashEmbedder({ dimensions: 0 })).toThrow(RangeError);
    expect(() => createHashEmbedder({ dimensions: 12.5 })).toThrow(RangeError);
  });
});

// ---- OpenAI-compatible -----------------------------------------------------------------------

interface EmbeddingsRequest {
  url: string;
  authorization: string | null;
  body: { model: string; input: string[]; dimensions?: number; encoding_format?: string };
}

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/** A scripted /embeddings endpoint: each request takes the next answer, or gets `fallback`. */
function embeddingsStandIn(
  answers: Array<Answer | ((request: EmbeddingsRequest) => Answer)>,
  fallback: (request: EmbeddingsRequest) => Answer,
) {
  const requests: EmbeddingsRequest[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const recorded: EmbeddingsRequest = {
      url: request.url,
      authorization: request.headers.get("authorization"),
      body: (await request.json()) as EmbeddingsRequest["body"],
    };
    requests.push(recorded);
    const next = answers.shift() ?? fallback;
    const answer = typeof next === "function" ? next(recorded) : next;
    return new Response(JSON.stringify(answer.body), {
      status: answer.status,
      headers: { "content-type": "application/json", ...answer.headers },
    });
  };
  return { fetch, requests };
}

/** A distinct, not-normalized vector per input text ("t7" -> seed 7). */
const rawVector = (size: number, seed: number) =>
  Array.from({ length: size }, (_, i) => 3 * Math.sin(seed + i) + 0.5);

/** A valid answer with the vectors listed in reverse, so only `index` gives the order. */
const reversedAnswer =
  (size: number) =>
  (request: EmbeddingsRequest): Answer => ({
    status: 200,
    body: {
      object: "list",
      model: request.body.model,
      data: request.body.input
        .map((text, index) => ({
          object: "embedding",
          index,
          embedding: rawVector(size, Number(text.slice(1))),
        }))
        .reverse(),
      usage: { prompt_tokens: 1, total_tokens: 1 },
    },
  });

function openAIEmbedder(
  fetch: typeof globalThis.fetch,
  overrides: Partial<OpenAIEmbedderOptions> = {},
) {
  const delays: number[] = [];
  const embedder = createOpenAIEmbedder({
    apiKey: API_KEY,
    baseURL: "https://embeddings.test/v1",
    model: "text-embedding-3-small",
    dimensions: 8,
    fetch,
    sleep: async (ms) => void delays.push(ms),
    random: () => 0.5,
    ...overrides,
  });
  return { embedder, delays };
}

async function embeddingFailure(promise: Promise<unknown>): Promise<EmbeddingError> {
  const error: unknown = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(EmbeddingError);
  return error as EmbeddingError;
}

describe("OpenAI-compatible embedder", () => {
  it("splits 250 texts into requests of at most 100, restores order by index, and normalizes", async () => {
    const standIn = embeddingsStandIn([], reversedAnswer(8));
    const { embedder } = openAIEmbedder(standIn.fetch);
    const texts = Array.from({ length: 250 }, (_, i) => `t${i}`);

    const vectors = await embedder.embed(texts);

    expect(standIn.requests.map((r) => r.body.input.length)).toEqual([100, 100, 50]);
    expect(standIn.requests.map((r) => r.body.input[0])).toEqual(["t0", "t100", "t200"]);
    expect(standIn.requests[0]).toMatchObject({
      url: "https://embeddings.test/v1/embeddings",
      authorization: `Bearer ${API_KEY}`,
      body: { model: "text-embedding-3-small", dimensions: 8, encoding_format: "float" },
    });
    expect(vectors).toHaveLength(250);
    for (const i of [0, 7, 149, 249]) {
      const expected = rawVector(8, i);
      const length = Math.hypot(...expected);
      expect(vectors[i]![0]).toBeCloseTo(expected[0]! / length, 5);
      expect(vectors[i]![5]).toBeCloseTo(expected[5]! / length, 5);
      expect(norm(vectors[i]!)).toBeCloseTo(1, 5);
    }
    expect({
      id: embedder.id,
      kind: embedder.kind,
      dimensions: embedder.dimensions,
      maxBatch: embedder.maxBatch,
    }).toEqual({
      id: "openai:text-embedding-3-small",
      kind: "openai",
      dimensions: 8,
      maxBatch: 100,
    });
  });

  it("sends no dimensions to a model that does not take them, but still checks the size", async () => {
    const standIn = embeddingsStandIn([], reversedAnswer(8));
    const { embedder } = openAIEmbedder(standIn.fetch, { model: "nomic-embed-text" });
    await embedder.embed(["t1", "t2"]);
    expect(standIn.requests[0]!.body.model).toBe("nomic-embed-text");
    expect(standIn.requests[0]!.body).not.toHaveProperty("dimensions");
  });

  it("makes no request for no texts", async () => {
    const standIn = embeddingsStandIn([], reversedAnswer(8));
    const { embedder } = openAIEmbedder(standIn.fetch);
    expect(await embedder.embed([])).toEqual([]);
    expect(standIn.requests).toHaveLength(0);
  });

  it("retries a 429 after the delay the server asks for, then succeeds", async () => {
    const standIn = embeddingsStandIn(
      [
        {
          status: 429,
          body: { error: { message: "slow down" } },
          headers: { "retry-after-ms": "1200" },
        },
      ],
      reversedAnswer(8),
    );
    const { embedder, delays } = openAIEmbedder(standIn.fetch);
    const vectors = await embedder.embed(["t1", "t2", "t3"]);
    expect(vectors).toHaveLength(3);
    expect(standIn.requests).toHaveLength(2);
    expect(delays).toEqual([1200]);
  });

  it("gives up on a lasting 503 after four attempts with backoff", async () => {
    const standIn = embeddingsStandIn([], () => ({
      status: 503,
      body: { error: { message: "overloaded" } },
    }));
    const { embedder, delays } = openAIEmbedder(standIn.fetch);
    const error = await embeddingFailure(embedder.embed(["t1"]));
    expect(standIn.requests).toHaveLength(4);
    // Full jitter with random() = 0.5: half of 500, 1000, 2000 ms.
    expect(delays).toEqual([250, 500, 1000]);
    expect(error.message).toContain("text-embedding-3-small");
    expect(error.message).toContain("HTTP 503 after 4 attempts");
  });

  it("refuses vectors of the wrong size at once, naming expected and actual size but never the key", async () => {
    const standIn = embeddingsStandIn([], reversedAnswer(5));
    const { embedder } = openAIEmbedder(standIn.fetch, { model: "custom-embedder" });
    const error = await embeddingFailure(embedder.embed(["t1", "t2"]));
    expect(standIn.requests).toHaveLength(1);
    expect(error.code).toBe("embedding");
    expect(error.message).toMatch(
      /^embedding model custom-embedder returned 5-dimensional vectors/,
    );
    expect(error.message).toContain("expected 8");
    expect(error.message).not.toContain("5ecret");
  });

  it("turns a 401 into an EmbeddingError at once, without the upstream text that echoes the key", async () => {
    const standIn = embeddingsStandIn([], () => ({
      status: 401,
      body: {
        error: {
          message: `Incorrect API key provided: ${API_KEY.slice(0, 12)}***`,
          code: "invalid_api_key",
        },
      },
    }));
    const { embedder, delays } = openAIEmbedder(standIn.fetch);
    const error = await embeddingFailure(embedder.embed(["t1"]));
    expect(standIn.requests).toHaveLength(1);
    expect(delays).toEqual([]);
    expect(error.message).toContain("HTTP 401");
    expect(error.message).toContain("OPENAI_API_KEY");
    expect(error.message).not.toContain("sk-embed");
  });

  it("retries a malformed answer and reports it when it stays malformed", async () => {
    const missing = {
      status: 200,
      body: { object: "list", data: [{ index: 0, embedding: rawVector(8, 1) }] },
    };
    const standIn = embeddingsStandIn([], () => missing);
    const { embedder } = openAIEmbedder(standIn.fetch, { retry: { maxAttempts: 2 } });
    const error = await embeddingFailure(embedder.embed(["t1", "t2"]));
    expect(standIn.requests).toHaveLength(2);
    expect(error.message).toContain("malformed");
    expect(error.message).toContain("1 vectors for 2 inputs");
  });

  it("refuses an answer that repeats an index", async () => {
    const repeated = {
      status: 200,
      body: {
        data: [
          { index: 0, embedding: rawVector(8, 1) },
          { index: 0, embedding: rawVector(8, 2) },
        ],
      },
    };
    const standIn = embeddingsStandIn([], () => repeated);
    const { embedder } = openAIEmbedder(standIn.fetch, { retry: { maxAttempts: 1 } });
    const error = await embeddingFailure(embedder.embed(["t1", "t2"]));
    expect(error.message).toContain("index 0");
  });
});

// ---- Workers AI --------------------------------------------------------------------------------

function fakeAi(answer: (model: string, text: string[]) => unknown) {
  const calls: Array<{ model: string; text: string[] }> = [];
  const ai = {
    run: async (model: string, inputs: Record<string, unknown>): Promise<unknown> => {
      const text = inputs.text as string[];
      calls.push({ model, text });
      return answer(model, text);
    },
  };
  return { ai, calls };
}

const bgeAnswer = (size: number) => (_model: string, text: string[]) => ({
  shape: [text.length, size],
  data: text.map((t) => rawVector(size, Number(t.slice(1)))),
  pooling: "cls",
});

describe("Workers AI embedder", () => {
  it("batches by 100, keeps order and normalizes", async () => {
    const { ai, calls } = fakeAi(bgeAnswer(4));
    const embedder = createWorkersAIEmbedder({
      ai,
      model: "@cf/baai/bge-small-en-v1.5",
      dimensions: 4,
    });
    const texts = Array.from({ length: 150 }, (_, i) => `t${i}`);

    const vectors = await embedder.embed(texts);

    expect(calls.map((c) => [c.model, c.text.length])).toEqual([
      ["@cf/baai/bge-small-en-v1.5", 100],
      ["@cf/baai/bge-small-en-v1.5", 50],
    ]);
    const expected = rawVector(4, 120);
    expect(vectors[120]![2]).toBeCloseTo(expected[2]! / Math.hypot(...expected), 5);
    expect(norm(vectors[0]!)).toBeCloseTo(1, 5);
    expect({ id: embedder.id, kind: embedder.kind, maxBatch: embedder.maxBatch }).toEqual({
      id: "workers-ai:@cf/baai/bge-small-en-v1.5",
      kind: "workers-ai",
      maxBatch: 100,
    });
  });

  it("refuses vectors of the wrong size without retrying", async () => {
    const { ai, calls } = fakeAi(bgeAnswer(6));
    const embedder = createWorkersAIEmbedder({
      ai,
      model: "@cf/baai/bge-base-en-v1.5",
      dimensions: 4,
    });
    const error = await embeddingFailure(embedder.embed(["t1"]));
    expect(calls).toHaveLength(1);
    expect(error.message).toContain("6-dimensional");
    expect(error.message).toContain("expected 4");
  });

  it("retries a failed run once, then gives up with an EmbeddingError", async () => {
    let failures = 1;
    const flaky = fakeAi((model, text) => {
      if (failures-- > 0) throw new Error("capacity temporarily exceeded");
      return bgeAnswer(4)(model, text);
    });
    const embedder = createWorkersAIEmbedder({
      ai: flaky.ai,
      model: "@cf/baai/bge-small-en-v1.5",
      dimensions: 4,
    });
    expect(await embedder.embed(["t1"])).toHaveLength(1);
    expect(flaky.calls).toHaveLength(2);

    const broken = fakeAi(() => ({ response: "not embeddings" }));
    const failing = createWorkersAIEmbedder({
      ai: broken.ai,
      model: "@cf/baai/bge-small-en-v1.5",
      dimensions: 4,
    });
    const error = await embeddingFailure(failing.embed(["t1"]));
    expect(broken.calls).toHaveLength(2);
    expect(error.message).toContain("malformed output");
  });
});

// ---- configuration -----------------------------------------------------------------------------

/** A fresh env object each time (loadConfig caches per object), with only the named variables. */
function configFor(vars: Partial<Omit<Env, keyof RequiredBindings>>) {
  return loadConfig({ ...requiredBindings(), ...vars });
}

const fakeAiBinding = (answer = bgeAnswer(768)) => fakeAi(answer).ai as unknown as Ai;

describe("embedding configuration", () => {
  it("uses the local hashed embedder by default", () => {
    const config = configFor({});
    expect(config.embedding).toEqual({ kind: "local", dimensions: 384 });
    expect(describeEmbedder(createEmbedder(config))).toEqual({
      backend: "local",
      id: "local:hash-v1",
      dimensions: 384,
    });
    expect(configFor({ EMBEDDING_DIMENSIONS: "256" }).embedding).toEqual({
      kind: "local",
      dimensions: 256,
    });
    expect(configFor({ EMBEDDING_DIMENSIONS: "" }).embedding).toEqual({
      kind: "local",
      dimensions: 384,
    });
  });

  it("stays local when EMBEDDING_MODEL names an OpenAI model but no OpenAI endpoint is configured", () => {
    expect(configFor({ EMBEDDING_MODEL: "text-embedding-3-small" }).embedding.kind).toBe("local");
  });

  it("picks OpenAI when EMBEDDING_MODEL is set and an endpoint is configured", () => {
    const small = configFor({ OPENAI_API_KEY: API_KEY, EMBEDDING_MODEL: "text-embedding-3-small" });
    expect(small.embedding).toEqual({
      kind: "openai",
      apiKey: API_KEY,
      baseURL: "https://api.openai.com/v1",
      model: "text-embedding-3-small",
      dimensions: 1536,
    });
    // 3-large gives 3,072 natively; Vectorize stops at 1,536, so that is what we ask for.
    expect(
      configFor({ OPENAI_API_KEY: API_KEY, EMBEDDING_MODEL: "text-embedding-3-large" }).embedding,
    ).toMatchObject({ dimensions: 1536 });
    expect(
      configFor({
        OPENAI_API_KEY: API_KEY,
        EMBEDDING_MODEL: "text-embedding-3-large",
        EMBEDDING_DIMENSIONS: "512",
      }).embedding,
    ).toMatchObject({
      dimensions: 512,
    });
    expect(
      configFor({
        OPENAI_BASE_URL: "http://ollama.test/v1",
        EMBEDDING_MODEL: "nomic-embed-text",
        EMBEDDING_DIMENSIONS: "768",
      }).embedding,
    ).toEqual({
      kind: "openai",
      apiKey: "not-needed",
      baseURL: "http://ollama.test/v1",
      model: "nomic-embed-text",
      dimensions: 768,
    });
  });

  it("asks for EMBEDDING_DIMENSIONS when the OpenAI-compatible model's size is unknown", () => {
    const attempt = () =>
      configFor({ OPENAI_API_KEY: API_KEY, EMBEDDING_MODEL: "mystery-embedder" });
    expect(attempt).toThrow(NotConfiguredError);
    expect(attempt).toThrow(/EMBEDDING_DIMENSIONS must be set/);
  });

  it("picks Workers AI when the AI binding exists, with the model's known size", () => {
    const ai = fakeAiBinding();
    expect(configFor({ AI: ai }).embedding).toEqual({
      kind: "workers-ai",
      ai,
      model: "@cf/baai/bge-base-en-v1.5",
      dimensions: 768,
    });
    expect(
      configFor({ AI: ai, EMBEDDING_MODEL: "@cf/baai/bge-small-en-v1.5" }).embedding,
    ).toMatchObject({
      kind: "workers-ai",
      model: "@cf/baai/bge-small-en-v1.5",
      dimensions: 384,
    });
    // An OpenAI key does not send a Workers AI model name to OpenAI.
    expect(
      configFor({ AI: ai, OPENAI_API_KEY: API_KEY, EMBEDDING_MODEL: "@cf/baai/bge-m3" }).embedding,
    ).toMatchObject({
      kind: "workers-ai",
      dimensions: 1024,
    });
    // An OpenAI model name means nothing to Workers AI: the default serves.
    expect(
      configFor({ AI: ai, EMBEDDING_MODEL: "text-embedding-3-small" }).embedding,
    ).toMatchObject({ model: "@cf/baai/bge-base-en-v1.5" });
    // A known model's size is fixed: EMBEDDING_DIMENSIONS only sizes models we do not know.
    expect(configFor({ AI: ai, EMBEDDING_DIMENSIONS: "384" }).embedding).toMatchObject({
      dimensions: 768,
    });
    expect(
      configFor({ AI: ai, EMBEDDING_MODEL: "@cf/unknown/embedder", EMBEDDING_DIMENSIONS: "640" })
        .embedding,
    ).toMatchObject({ dimensions: 640 });
    expect(() => configFor({ AI: ai, EMBEDDING_MODEL: "@cf/unknown/embedder" })).toThrow(
      /EMBEDDING_DIMENSIONS must be set/,
    );
  });

  it.each(["banana", "0", "-3", "12.5", "4096"])(
    "refuses EMBEDDING_DIMENSIONS=%s, naming the variable but not the value",
    (value) => {
      const error: unknown = (() => {
        try {
          configFor({ EMBEDDING_DIMENSIONS: value });
        } catch (caught) {
          return caught;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(NotConfiguredError);
      const message = (error as Error).message;
      expect(message).toContain("EMBEDDING_DIMENSIONS");
      expect(message).toContain("from 1 to 1536");
      expect(message).not.toContain(value);
    },
  );

  it("builds embedders that reach the configured backends", async () => {
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const request = new Request(input, init);
      const body = (await request.json()) as { input: string[] };
      const data = body.input.map((_, index) => ({ index, embedding: rawVector(1536, index) }));
      return Response.json({ object: "list", data });
    });
    const openai = createEmbedder(
      configFor({ OPENAI_API_KEY: API_KEY, EMBEDDING_MODEL: "text-embedding-3-small" }),
    );
    expect(describeEmbedder(openai)).toEqual({
      backend: "openai",
      id: "openai:text-embedding-3-small",
      dimensions: 1536,
    });
    const [vector] = await openai.embed(["hello"]);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(vector).toHaveLength(1536);

    const { ai, calls } = fakeAi(bgeAnswer(768));
    const workers = createEmbedder(configFor({ AI: ai as unknown as Ai }));
    expect(describeEmbedder(workers)).toEqual({
      backend: "workers-ai",
      id: "workers-ai:@cf/baai/bge-base-en-v1.5",
      dimensions: 768,
    });
    expect(await workers.embed(["t1", "t2"])).toHaveLength(2);
    expect(calls).toEqual([{ model: "@cf/baai/bge-base-en-v1.5", text: ["t1", "t2"] }]);
  });
});

describe("Workers AI with the AI binding declared", () => {
  it("serves chat and a new index's embeddings on Workers AI when no OpenAI endpoint is set", async () => {
    const config = configFor({ AI: fakeAiBinding() });
    expect(config.model.kind).toBe("workers-ai");
    expect(config.embedding).toMatchObject({
      kind: "workers-ai",
      model: "@cf/baai/bge-base-en-v1.5",
      dimensions: 768,
    });
    const embedder = createEmbedder(config, async () => null);
    await embedder.ready?.();
    expect(describeEmbedder(embedder)).toEqual({
      backend: "workers-ai",
      id: "workers-ai:@cf/baai/bge-base-en-v1.5",
      dimensions: 768,
    });
  });

  it("ignores the binding with WORKERS_AI=false (local development, tests): no model, the local embedder", () => {
    const config = configFor({ AI: fakeAiBinding(), WORKERS_AI: "false" });
    expect(config.model.kind).toBe("none");
    expect(config.embedding).toEqual({ kind: "local", dimensions: 384 });
    expect(() => configFor({ WORKERS_AI: "yes" })).toThrow(/WORKERS_AI must be "true" or "false"/);
  });

  it("keeps the local embedder with an OpenAI-compatible chat endpoint, so a local run with one stays offline", () => {
    expect(
      configFor({ OPENAI_BASE_URL: "http://127.0.0.1:11434/v1", AI: fakeAiBinding() }).embedding,
    ).toEqual({ kind: "local", dimensions: 384 });
  });

  it("keeps the embedder an index was filled with: 384-dimension local vectors stay local after the binding appears", async () => {
    const { ai, calls } = fakeAi(bgeAnswer(768));
    const config = configFor({ AI: ai as unknown as Ai });
    expect(config.embedding.kind).toBe("workers-ai");
    const embedder = createEmbedder(config, async () => 384);
    const [vector] = await embedder.embed(["the tide comes in twice a day"]);
    expect(vector).toHaveLength(384);
    expect(describeEmbedder(embedder)).toEqual({
      backend: "local",
      id: "local:hash-v1",
      dimensions: 384,
    });
    expect(calls).toHaveLength(0);
  });

  it("does not pin when EMBEDDING_MODEL names the embedder: changing embedders stays an explicit re-embed", async () => {
    const config = configFor({ AI: fakeAiBinding(), EMBEDDING_MODEL: "@cf/baai/bge-base-en-v1.5" });
    expect(config.embeddingAlternatives).toEqual([]);
    const embedder = createEmbedder(config, async () => 384);
    await embedder.ready?.();
    expect(embedder.dimensions).toBe(768);
  });
});
