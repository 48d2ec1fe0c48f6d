// The transcriber (src/model/transcriber.ts) on each backend: the OpenAI-compatible
// /audio/transcriptions against the model stand-in, Workers AI's Whisper against a fake `Ai`
// binding (Workers AI runs only remotely), and no backend at all.
import { describe, expect, it } from "vitest";
import type { ModelBackend } from "../../src/config.ts";
import {
  createTranscriber,
  MAX_TRANSCRIPTION_BYTES,
  TranscriptionError,
} from "../../src/model/transcriber.ts";
import { createOpenAIStandIn } from "../stand-ins/openai-stand-in.ts";

const OGG = new Uint8Array([0x4f, 0x67, 0x67, 0x53, 0, 2, 0, 0, 1, 2, 3]);
const audio = { bytes: OGG, contentType: "audio/ogg", filename: "voice.ogg" };
const openai: ModelBackend = {
  kind: "openai",
  apiKey: "sk-test-not-a-real-key",
  baseURL: "http://model.test/v1/",
  promptCacheKey: false,
};

/** A Workers AI binding that records what `run` was given and answers `output` (or throws). */
function fakeAi(output: unknown) {
  const runs: { model: string; inputs: unknown }[] = [];
  const ai = {
    run: async (model: string, inputs: unknown) => {
      runs.push({ model, inputs });
      if (output instanceof Error) throw output;
      return output;
    },
  } as unknown as Ai;
  return { ai, runs };
}

async function failure(promise: Promise<unknown>): Promise<TranscriptionError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TranscriptionError);
  return error as TranscriptionError;
}

describe("transcriber: an OpenAI-compatible /audio/transcriptions", () => {
  it("uploads the file with the configured model and returns the transcript", async () => {
    const standIn = createOpenAIStandIn();
    standIn.transcribeWith({ text: "  see you at noon \n" });
    const transcriber = createTranscriber({
      backend: openai,
      model: "whisper-1",
      fetch: standIn.fetch,
    });
    expect(await transcriber.transcribe(audio)).toBe("see you at noon");
    const [call] = standIn.transcriptions;
    expect(call).toMatchObject({ model: "whisper-1", filename: "voice.ogg" });
    expect([...call!.bytes]).toEqual([...OGG]);
    expect(call!.headers.authorization).toBe("Bearer sk-test-not-a-real-key");
  });

  it("fails with words for the person, never the backend's body, when the API refuses", async () => {
    const standIn = createOpenAIStandIn();
    standIn.transcribeWith({ status: 500 });
    const transcriber = createTranscriber({
      backend: openai,
      model: "whisper-1",
      fetch: standIn.fetch,
    });
    const error = await failure(transcriber.transcribe(audio));
    expect(error.reason).toBe("model");
    expect(error.message).toBe("the transcription model (whisper-1) answered 500");
  });

  it("says no speech was heard when the transcript is empty", async () => {
    const standIn = createOpenAIStandIn();
    standIn.transcribeWith({ text: "   " });
    const transcriber = createTranscriber({
      backend: openai,
      model: "whisper-1",
      fetch: standIn.fetch,
    });
    expect((await failure(transcriber.transcribe(audio))).reason).toBe("no_speech");
  });

  it("refuses a file over Whisper's 25 MB without a request", async () => {
    const standIn = createOpenAIStandIn();
    const transcriber = createTranscriber({
      backend: openai,
      model: "whisper-1",
      fetch: standIn.fetch,
    });
    const big = { ...audio, bytes: new Uint8Array(MAX_TRANSCRIPTION_BYTES + 1) };
    expect((await failure(transcriber.transcribe(big))).reason).toBe("too_large");
    expect(standIn.transcriptions).toHaveLength(0);
  });
});

describe("transcriber: Workers AI's Whisper", () => {
  it("runs @cf/openai/whisper with the bytes as an array of byte values", async () => {
    const { ai, runs } = fakeAi({ text: "hello from whisper", word_count: 3 });
    const transcriber = createTranscriber({
      backend: { kind: "workers-ai", ai },
      model: "@cf/openai/whisper",
      fetch: () => Promise.reject(new Error("no fetch on Workers AI")),
    });
    expect(await transcriber.transcribe(audio)).toBe("hello from whisper");
    expect(runs).toEqual([{ model: "@cf/openai/whisper", inputs: { audio: [...OGG] } }]);
  });

  it("sends whisper-large-v3-turbo the file base64-encoded", async () => {
    const { ai, runs } = fakeAi({ text: "turbo" });
    const transcriber = createTranscriber({
      backend: { kind: "workers-ai", ai },
      model: "@cf/openai/whisper-large-v3-turbo",
      fetch: () => Promise.reject(new Error("no fetch on Workers AI")),
    });
    expect(await transcriber.transcribe(audio)).toBe("turbo");
    expect(runs[0]!.inputs).toEqual({ audio: btoa(String.fromCharCode(...OGG)) });
  });

  it("fails as a model failure when the binding throws or answers without text", async () => {
    for (const output of [new Error("InferenceUpstreamError: secret detail"), { nope: 1 }]) {
      const { ai } = fakeAi(output);
      const transcriber = createTranscriber({
        backend: { kind: "workers-ai", ai },
        model: "@cf/openai/whisper",
        fetch: () => Promise.reject(new Error("unused")),
      });
      const error = await failure(transcriber.transcribe(audio));
      expect(error.reason).toBe("model");
      expect(error.message).not.toContain("secret detail");
    }
  });
});

describe("transcriber: no model backend", () => {
  it("refuses with 'no transcription model is configured'", async () => {
    const transcriber = createTranscriber({
      backend: { kind: "none" },
      model: "whisper-1",
      fetch: () => Promise.reject(new Error("unused")),
    });
    const error = await failure(transcriber.transcribe(audio));
    expect(error).toMatchObject({
      reason: "not_configured",
      message: "no transcription model is configured",
    });
  });
});
