// Which chat models the configuration picks (src/config.ts): the small model for side prompts
// (facts, summaries, respond decisions) must be one the configured endpoint serves.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import type { Env } from "../../src/env.ts";
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
