// What the configuration picks (src/config.ts): the small model for side prompts (facts,
// summaries, respond decisions) must be one the configured endpoint serves; a Vectorize binding is
// used unless VECTORIZE=false, which local development sets (it answers only remotely).
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import type { Env } from "../../src/env.ts";
import { dataOn } from "../../src/db/stores/index.ts";
import { requiredBindings, type RequiredBindings } from "../helpers/bindings.ts";

/** A fresh env object each time (loadConfig caches per object), with only the named variables. */
const modelsFor = (vars: Partial<Omit<Env, keyof RequiredBindings>>) =>
  loadConfig({ ...requiredBindings(), ...vars }).models;

describe("chat model configuration", () => {
  it("uses OpenAI's small model on OpenAI", () => {
    expect(modelsFor({ OPENAI_API_KEY: "sk-x" })).toMatchObject({
      primary: "gpt-4.1-mini",
      small: "gpt-4.1-nano",
    });
    expect(
      modelsFor({ OPENAI_API_KEY: "sk-x", OPENAI_BASE_URL: "https://api.openai.com/v1/" }).small,
    ).toBe("gpt-4.1-nano");
  });

  it("uses MODEL for side prompts on another endpoint unless SMALL_MODEL is set", () => {
    const local = { OPENAI_BASE_URL: "http://localhost:11434/v1", MODEL: "llama3.2" };
    expect(modelsFor(local)).toMatchObject({ primary: "llama3.2", small: "llama3.2" });
    expect(modelsFor({ ...local, SMALL_MODEL: "qwen2.5:0.5b" }).small).toBe("qwen2.5:0.5b");
    expect(modelsFor({ OPENAI_BASE_URL: "http://localhost:11434/v1" })).toMatchObject({
      primary: "gpt-4.1-mini",
      small: "gpt-4.1-mini",
    });
  });
});

describe("prompt cache key", () => {
  const sends = (vars: Partial<Omit<Env, keyof RequiredBindings>>) => {
    const model = loadConfig({ ...requiredBindings(), ...vars }).model;
    return model.kind === "openai" ? model.promptCacheKey : null;
  };

  it("is sent to OpenAI's own endpoint by default, and elsewhere only when switched on", () => {
    expect(sends({ OPENAI_API_KEY: "sk-x" })).toBe(true);
    // Another OpenAI-compatible server may refuse a parameter it does not know.
    expect(sends({ OPENAI_BASE_URL: "http://localhost:11434/v1" })).toBe(false);
    expect(sends({ OPENAI_BASE_URL: "http://localhost:11434/v1", PROMPT_CACHE_KEY: "on" })).toBe(
      true,
    );
    expect(sends({ OPENAI_API_KEY: "sk-x", PROMPT_CACHE_KEY: "off" })).toBe(false);
  });
});

describe("vector index configuration", () => {
  const binding = { describe: async () => ({}) } as unknown as Vectorize;

  it("uses the VECTORS binding when there is one, and not with VECTORIZE=false", () => {
    expect(loadConfig({ ...requiredBindings() }).vectors).toBeNull();
    expect(loadConfig({ ...requiredBindings(), VECTORS: binding }).vectors).toBe(binding);
    const local = loadConfig({ ...requiredBindings(), VECTORS: binding, VECTORIZE: "false" });
    expect(local.vectors).toBeNull();
  });

  it("leaves the binding unused in stores too: the local index in D1 serves", () => {
    const local = { ...requiredBindings(), VECTORS: binding, VECTORIZE: "false" };
    expect(dataOn(local, "DB").index.kind).toBe("local");
    expect(dataOn({ ...requiredBindings(), VECTORS: binding }, "DB").index.kind).toBe("vectorize");
  });
});
