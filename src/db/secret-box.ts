// Encrypts small secrets at rest (character secrets now, OAuth tokens later) with AES-256-GCM.
// The key is derived from SECRETS_KEY with HKDF so any long random string works as the variable;
// the record id is bound as additional data, so a ciphertext copied to another row will not open.
const FORMAT = "v1";
const IV_BYTES = 12;

export interface SecretBox {
  seal(plaintext: string, recordId: string): Promise<string>;
  open(sealed: string, recordId: string): Promise<string>;
}

export function createSecretBox(secretsKey: string): SecretBox {
  let key: Promise<CryptoKey> | undefined;
  const getKey = () => (key ??= deriveKey(secretsKey));
  const encoder = new TextEncoder();
  return {
    async seal(plaintext, recordId) {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const sealed = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(recordId) },
        await getKey(),
        encoder.encode(plaintext),
      );
      return `${FORMAT}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
    },
    async open(sealed, recordId) {
      const [format, iv, data] = sealed.split(".");
      if (format !== FORMAT || !iv || !data) throw new Error("sealed secret has an unknown format");
      const plain = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: fromBase64(iv), additionalData: encoder.encode(recordId) },
        await getKey(),
        fromBase64(data),
      );
      return new TextDecoder().decode(plain);
    },
  };
}

async function deriveKey(secretsKey: string): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secretsKey),
    "HKDF",
    false,
    ["deriveKey"],
  );
  return crypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: new TextEncoder().encode("edge-agents/secret-box"),
      info: new TextEncoder().encode(FORMAT),
    },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
