// Slack's request signing (api.slack.com/authentication/verifying-requests-from-slack), the same for
// the Events API, interactivity and slash commands: `X-Slack-Signature: v0=<hex HMAC-SHA256>` of
// `v0:<X-Slack-Request-Timestamp>:<raw body>` keyed with the app's signing secret. Checked before
// anything is parsed; a timestamp more than 5 minutes off either way is a replay. Nothing returned
// or thrown here carries the secret, the signature or the body.

/** Slack's replay window: a signed timestamp further than this from now, either way, is refused. */
export const SLACK_SIGNATURE_WINDOW_MS = 5 * 60 * 1000;

export interface VerifySlackSignatureInput {
  signingSecret: string;
  /** `X-Slack-Request-Timestamp`: integer Unix seconds. */
  timestamp: string | null | undefined;
  /** `X-Slack-Signature`: `v0=` + 64 hex digits. */
  signature: string | null | undefined;
  /** The body exactly as received: the signature covers its bytes, not a re-serialisation. */
  rawBody: string | Uint8Array;
  nowMs: number;
}

/**
 * `missing`: a header is absent, or the timestamp is not integer seconds; `stale`: outside the
 * window; `mismatch`: the signature is malformed or not the HMAC of this body and timestamp.
 */
export type SlackSignatureResult =
  | { ok: true }
  | { ok: false; reason: "missing" | "stale" | "mismatch" };

const TIMESTAMP = /^\d{1,12}$/;
const SIGNATURE = /^v0=([0-9a-fA-F]{64})$/;
const encoder = new TextEncoder();

// One imported key per secret, as the Discord route keeps its public key: importKey per request
// would be wasted work on every event.
const keys = new Map<string, Promise<CryptoKey>>();
function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey(
      "raw",
      encoder.encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
    key.catch(() => keys.delete(secret));
    keys.set(secret, key);
  }
  return key;
}

function baseString(timestamp: string, rawBody: string | Uint8Array): Uint8Array<ArrayBuffer> {
  const head = encoder.encode(`v0:${timestamp}:`);
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody;
  const bytes = new Uint8Array(head.length + body.length);
  bytes.set(head, 0);
  bytes.set(body, head.length);
  return bytes;
}

export async function verifySlackSignature(
  input: VerifySlackSignatureInput,
): Promise<SlackSignatureResult> {
  const { timestamp, signature } = input;
  if (!timestamp || !signature || !TIMESTAMP.test(timestamp))
    return { ok: false, reason: "missing" };
  if (Math.abs(input.nowMs - Number(timestamp) * 1000) > SLACK_SIGNATURE_WINDOW_MS)
    return { ok: false, reason: "stale" };
  const hex = SIGNATURE.exec(signature)?.[1];
  // An empty secret would make anyone's HMAC valid-looking to a misconfigured worker: never accept.
  if (!hex || input.signingSecret.length === 0) return { ok: false, reason: "mismatch" };
  const digest = new Uint8Array(32);
  for (let i = 0; i < 32; i++) digest[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  // crypto.subtle.verify compares the MAC in constant time (WebCrypto's HMAC verify operation).
  const valid = await crypto.subtle.verify(
    "HMAC",
    await hmacKey(input.signingSecret),
    digest,
    baseString(timestamp, input.rawBody),
  );
  return valid ? { ok: true } : { ok: false, reason: "mismatch" };
}

/** The `X-Slack-Signature` value Slack would send (for stand-ins and tests). */
export async function signSlackRequest(
  signingSecret: string,
  timestamp: string | number,
  rawBody: string | Uint8Array,
): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    await hmacKey(signingSecret),
    baseString(String(timestamp), rawBody),
  );
  let hex = "";
  for (const byte of new Uint8Array(mac)) hex += byte.toString(16).padStart(2, "0");
  return `v0=${hex}`;
}
