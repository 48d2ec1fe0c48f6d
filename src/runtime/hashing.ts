// SHA-256 as lower-case hex, with Web Crypto (workerd and Node alike): idempotency fingerprints,
// document ids, token and OAuth-state lookups.

export function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export async function sha256Hex(text: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}
