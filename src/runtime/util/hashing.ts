// SHA-256 with Web Crypto (workerd and Node alike), the one place the project hashes: as raw
// bytes, or lower-case hex (idempotency fingerprints, document, profile and summary ids, token and
// OAuth-state lookups, media checksums). Also base64url, for tokens, states, signatures and
// Vectorize ids, and a 32-bit FNV-1a for fixed picks that need no secrecy (sampling, checkpoints,
// short name suffixes).

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

export function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += HEX[byte];
  return hex;
}

/** Bytes from lower- or upper-case hex (an even number of digits). */
export function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++)
    bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** 32-bit FNV-1a of a text's UTF-16 code units, as an unsigned number: fast, stable, not secure. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** SHA-256 of a text (as UTF-8) or of bytes. */
export async function sha256(input: string | Uint8Array): Promise<Uint8Array<ArrayBuffer>> {
  const bytes = typeof input === "string" ? new TextEncoder().encode(input) : input;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

export async function sha256Hex(input: string | Uint8Array): Promise<string> {
  return toHex(await sha256(input));
}

export function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
