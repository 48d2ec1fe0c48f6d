// Speech to text for voice notes, on the backend that serves the chat model: an OpenAI-compatible
// `POST {baseURL}/audio/transcriptions` (multipart: the file and `model`), or Workers AI's Whisper
// through the AI binding. Answers are checked with zod; a failure is a TranscriptionError whose
// message is safe to show the person (it never quotes the backend's body).
import { z } from "zod";
import type { ModelBackend } from "../config.ts";

/** Whisper takes files up to 25 MB; Telegram serves bots at most 20 MB. */
export const MAX_TRANSCRIPTION_BYTES = 25 * 1024 * 1024;
/** A long voice note takes a while to transcribe; past this the person is told it failed. */
export const TRANSCRIPTION_TIMEOUT_MS = 120_000;
/** A transcript longer than this is cut (an hour of speech is about 60,000 characters). */
export const MAX_TRANSCRIPT_CHARS = 64_000;

export interface AudioFile {
  bytes: Uint8Array;
  contentType: string;
  /** The name sent with the upload; OpenAI reads the format from its extension. */
  filename: string;
}

export interface Transcriber {
  readonly model: string;
  transcribe(audio: AudioFile): Promise<string>;
}

export type TranscriptionFailure = "not_configured" | "too_large" | "model" | "no_speech";

/** Why a transcription failed, in words for the person whose voice note it was. */
export class TranscriptionError extends Error {
  readonly reason: TranscriptionFailure;
  constructor(reason: TranscriptionFailure, message: string) {
    super(message);
    this.name = "TranscriptionError";
    this.reason = reason;
  }
}

export interface TranscriberOptions {
  backend: ModelBackend;
  model: string;
  /** For the OpenAI-compatible backend; late-bound by the caller so tests can replace it. */
  fetch: typeof fetch;
  timeoutMs?: number;
}

const OpenAITranscription = z.object({ text: z.string() });
const WorkersAITranscription = z.object({ text: z.string() });

/** The transcriber of the configured backend; one that always refuses when there is none. */
export function createTranscriber(options: TranscriberOptions): Transcriber {
  const { backend, model } = options;
  const timeoutMs = options.timeoutMs ?? TRANSCRIPTION_TIMEOUT_MS;
  const checked = (run: (audio: AudioFile) => Promise<string>) => ({
    model,
    async transcribe(audio: AudioFile): Promise<string> {
      if (audio.bytes.byteLength > MAX_TRANSCRIPTION_BYTES)
        throw new TranscriptionError(
          "too_large",
          `it is larger than ${MAX_TRANSCRIPTION_BYTES / 1024 / 1024} MB`,
        );
      const text = (await run(audio)).trim();
      if (text === "") throw new TranscriptionError("no_speech", "no speech was heard in it");
      return text.slice(0, MAX_TRANSCRIPT_CHARS);
    },
  });
  switch (backend.kind) {
    case "none":
      return checked(async () => {
        throw new TranscriptionError("not_configured", "no transcription model is configured");
      });
    case "openai":
      return checked(async (audio) => {
        const form = new FormData();
        form.append("file", new Blob([audio.bytes], { type: audio.contentType }), audio.filename);
        form.append("model", model);
        form.append("response_format", "json");
        const url = `${backend.baseURL.replace(/\/+$/, "")}/audio/transcriptions`;
        let response: Response;
        try {
          response = await options.fetch(url, {
            method: "POST",
            headers: { authorization: `Bearer ${backend.apiKey}` },
            body: form,
            signal: AbortSignal.timeout(timeoutMs),
          });
        } catch {
          throw modelFailed(model, "did not answer");
        }
        if (!response.ok) {
          await response.body?.cancel();
          throw modelFailed(model, `answered ${response.status}`);
        }
        const parsed = OpenAITranscription.safeParse(await response.json().catch(() => null));
        if (!parsed.success) throw modelFailed(model, "answered something unreadable");
        return parsed.data.text;
      });
    case "workers-ai":
      return checked(async (audio) => {
        let output: unknown;
        try {
          output = await backend.ai.run(model as "@cf/openai/whisper", whisperInput(model, audio));
        } catch {
          throw modelFailed(model, "failed");
        }
        const parsed = WorkersAITranscription.safeParse(output);
        if (!parsed.success) throw modelFailed(model, "answered something unreadable");
        return parsed.data.text;
      });
  }
}

/**
 * `@cf/openai/whisper` and `whisper-tiny-en` take the file as an array of byte values;
 * `whisper-large-v3-turbo` takes it base64-encoded.
 */
function whisperInput(model: string, audio: AudioFile): { audio: number[] } {
  if (model.includes("large-v3-turbo")) {
    let binary = "";
    for (let at = 0; at < audio.bytes.length; at += 0x8000)
      binary += String.fromCharCode(...audio.bytes.subarray(at, at + 0x8000));
    // The turbo model's input type differs; the binding takes either shape at run time.
    return { audio: btoa(binary) } as unknown as { audio: number[] };
  }
  return { audio: Array.from(audio.bytes) };
}

function modelFailed(model: string, what: string): TranscriptionError {
  return new TranscriptionError("model", `the transcription model (${model}) ${what}`);
}
