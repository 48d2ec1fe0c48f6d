// A webhook's raw body, read up to a limit: refused (413) past `maxBytes` by its declared length or
// while it streams in. The webhooks that check a signature or secret over the exact bytes (Telegram,
// Slack) read their bodies here, after that check where the check needs no body.
import { PayloadTooLargeError } from "../runtime/util/errors.ts";

export async function readCappedBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const tooLarge = () => new PayloadTooLargeError(`request body is larger than ${maxBytes} bytes`);
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes) throw tooLarge();
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
