// Signed, expiring URLs for R2 objects, so Meta (or anyone holding the link) can fetch one file
// for a while and nothing else: `/media/<key>?exp=<unix seconds>&sig=<HMAC-SHA256(key \n exp)>`.
// The HMAC key is derived from SECRETS_KEY with HKDF under its own label, so it is unrelated to
// the key that encrypts secrets at rest. Verification uses crypto.subtle.verify (constant time).
// No link lives longer than MAX_MEDIA_URL_LIFETIME_S: signing refuses a later expiry, and a link
// whose expiry is further away than that is refused even with a valid signature.

/** Keys as the media and attachment modules write them: no "..", no leading slash. */
export const MEDIA_KEY = /^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._\-/]{0,511}$/;
/** The longest a signed media link may live. */
export const MAX_MEDIA_URL_LIFETIME_S = 7 * 24 * 3600;

import { fromBase64Url, toBase64Url } from "../runtime/util/hashing.ts";

const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secretsKey: string): Promise<CryptoKey> {
  let key = keys.get(secretsKey);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", new TextEncoder().encode(secretsKey), "HKDF", false, ["deriveKey"])
      .then((material) =>
        crypto.subtle.deriveKey(
          {
            name: "HKDF",
            hash: "SHA-256",
            salt: new TextEncoder().encode("edge-agents/media-url"),
            info: new TextEncoder().encode("v1"),
          },
          material,
          { name: "HMAC", hash: "SHA-256", length: 256 },
          false,
          ["sign", "verify"],
        ),
      );
    keys.set(secretsKey, key);
  }
  return key;
}

function payload(key: string, expiresAt: number): Uint8Array {
  return new TextEncoder().encode(`${key}\n${expiresAt}`);
}

export async function signMediaUrl(
  baseUrl: string,
  key: string,
  expiresAt: number,
  secretsKey: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<string> {
  if (!MEDIA_KEY.test(key)) throw new Error(`not a media key: ${key}`);
  if (expiresAt - nowSeconds > MAX_MEDIA_URL_LIFETIME_S) {
    throw new RangeError(
      `a media link may live at most ${MAX_MEDIA_URL_LIFETIME_S} s; this one would live ${expiresAt - nowSeconds} s`,
    );
  }
  const signature = new Uint8Array(
    await crypto.subtle.sign("HMAC", await hmacKey(secretsKey), payload(key, expiresAt)),
  );
  const url = new URL(`/media/${key.split("/").map(encodeURIComponent).join("/")}`, baseUrl);
  url.searchParams.set("exp", String(expiresAt));
  url.searchParams.set("sig", toBase64Url(signature));
  return url.toString();
}

export type MediaSignatureCheck = "valid" | "expired" | "invalid";

export async function checkMediaSignature(
  key: string,
  exp: string,
  sig: string,
  secretsKey: string,
  nowSeconds: number,
): Promise<MediaSignatureCheck> {
  if (!/^\d{1,12}$/.test(exp) || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return "invalid";
  const signature = fromBase64Url(sig);
  const valid = await crypto.subtle.verify(
    "HMAC",
    await hmacKey(secretsKey),
    signature,
    payload(key, Number(exp)),
  );
  if (!valid) return "invalid";
  // Signed by a key holder, yet meant to outlive the cap (an old signer, or a forged lifetime).
  if (Number(exp) - nowSeconds > MAX_MEDIA_URL_LIFETIME_S) return "invalid";
  return Number(exp) < nowSeconds ? "expired" : "valid";
}
