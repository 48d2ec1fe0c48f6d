// Puts checked bytes into R2 the one way every upload path does: with their content type and
// SHA-256 (hex) in the object's metadata, so a copy can be verified and a re-upload recognised.
import { toHex } from "../runtime/hashing.ts";

/** `sha256` when the caller already hashed the bytes (it is not computed twice). */
export async function storeMedia(bucket: R2Bucket, key: string, bytes: Uint8Array, contentType: string, metadata: Record<string, string> = {}, knownSha256?: string): Promise<string> {
  const sha256 = knownSha256 ?? (await sha256OfBytes(bytes));
  await bucket.put(key, bytes, { httpMetadata: { contentType }, customMetadata: { ...metadata, sha256 } });
  return sha256;
}

export async function sha256OfBytes(bytes: Uint8Array): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}
