// A streaming multipart/form-data reader (RFC 7578 over RFC 2046): parts are handed out one at a
// time and their bodies chunk by chunk as the request streams in, so an upload is never held in
// memory whole. Only the bytes that could still be the start of a boundary are kept between reads.
// Strict where browsers and curl are strict: CRLF line breaks, a Content-Disposition of form-data
// with a name on every part, a closing boundary. Anything else is a 400 naming what is wrong.
import { PayloadTooLargeError, ValidationError } from "../runtime/util/errors.ts";

export interface MultipartPart {
  name: string;
  /** The file name the client sent (possibly ""), or null for a text field. */
  filename: string | null;
  contentType: string | null;
}

export interface MultipartReaderOptions {
  /** The whole body, counted as it streams (a Content-Length header may be absent or wrong). */
  maxBodyBytes: number;
  /** One part's header block. */
  maxHeaderBytes?: number;
}

const DEFAULT_MAX_HEADER_BYTES = 8 * 1024;
const CRLF = Uint8Array.of(0x0d, 0x0a);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The boundary of a multipart/form-data Content-Type, or null when it is not one. */
export function multipartBoundary(contentType: string | null | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType.trim())) return null;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))\s*(;|$)/i.exec(contentType);
  const boundary = match?.[1] ?? match?.[2];
  // RFC 2046 5.1.1: 1 to 70 characters; a trailing space is not allowed.
  return boundary && !/[\r\n]|\s$/.test(boundary) ? boundary : null;
}

type State = "preamble" | "headers" | "body" | "after-body" | "done";

export class MultipartReader {
  private readonly source: ReadableStreamDefaultReader<Uint8Array> | ReadableStreamBYOBReader;
  /** CRLF "--" boundary: every delimiter, the first included (a CRLF is put in front of the body). */
  private readonly delimiter: Uint8Array;
  private readonly maxBodyBytes: number;
  private readonly maxHeaderBytes: number;
  private buffer: Uint8Array = CRLF;
  private sourceDone = false;
  private bytesRead = 0;
  private state: State = "preamble";

  constructor(body: ReadableStream<Uint8Array>, boundary: string, options: MultipartReaderOptions) {
    this.source = byteReader(body) ?? body.getReader();
    this.delimiter = encoder.encode(`\r\n--${boundary}`);
    this.maxBodyBytes = options.maxBodyBytes;
    this.maxHeaderBytes = options.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  }

  /** The next part's headers (skipping what is left of the current one), or null after the last. */
  async nextPart(): Promise<MultipartPart | null> {
    while (this.state === "body") await this.readChunk();
    if (this.state === "preamble") await this.skipPreamble();
    if (this.state === "after-body") await this.readDelimiterLine();
    if (this.state === "done") return null;
    return this.readHeaders();
  }

  /** The current part's next bytes, or null at its end. Views into the stream's own chunks. */
  async readChunk(): Promise<Uint8Array | null> {
    if (this.state !== "body") return null;
    for (;;) {
      const at = indexOf(this.buffer, this.delimiter, 0);
      if (at >= 0) {
        const chunk = this.buffer.subarray(0, at);
        this.buffer = this.buffer.subarray(at);
        this.state = "after-body";
        return chunk.length > 0 ? chunk : null;
      }
      // Everything but a tail that could be the start of a delimiter is part of this body.
      const safe = this.buffer.length - partialMatchLength(this.buffer, this.delimiter);
      if (safe > 0) {
        const chunk = this.buffer.subarray(0, safe);
        this.buffer = this.buffer.subarray(safe);
        return chunk;
      }
      if (!(await this.fill()))
        throw new ValidationError(
          "the multipart body ended in the middle of a part (no closing boundary)",
        );
    }
  }

  /** The current part's body as UTF-8 text, refused past `maxBytes`. */
  async readText(maxBytes: number, what: string): Promise<string> {
    const chunks: Uint8Array[] = [];
    let length = 0;
    for (let chunk = await this.readChunk(); chunk; chunk = await this.readChunk()) {
      length += chunk.length;
      if (length > maxBytes) throw new ValidationError(`${what} is longer than ${maxBytes} bytes`);
      chunks.push(chunk);
    }
    return decoder.decode(concat(chunks, length));
  }

  /** Stops reading the request (after a refusal): the rest of the body is discarded. */
  async cancel(): Promise<void> {
    this.state = "done";
    await this.source.cancel().catch(() => undefined);
  }

  private async skipPreamble(): Promise<void> {
    for (;;) {
      const at = indexOf(this.buffer, this.delimiter, 0);
      if (at >= 0) {
        this.buffer = this.buffer.subarray(at);
        this.state = "after-body";
        return;
      }
      // RFC 2046 allows a preamble before the first boundary; it is ignored.
      this.buffer = this.buffer.subarray(
        this.buffer.length - partialMatchLength(this.buffer, this.delimiter),
      );
      if (!(await this.fill()))
        throw new ValidationError(
          "the body is not multipart/form-data with the boundary its Content-Type names",
        );
    }
  }

  /** After a delimiter: "--" closes the body; otherwise optional padding and CRLF start a part. */
  private async readDelimiterLine(): Promise<void> {
    const start = this.delimiter.length;
    for (;;) {
      const line = this.buffer.subarray(start);
      if (line.length >= 2 && line[0] === 0x2d && line[1] === 0x2d) {
        // The epilogue after the closing delimiter (usually a CRLF) is read to the end and ignored
        // (RFC 2046); it still counts against the body limit.
        this.state = "done";
        this.buffer = new Uint8Array(0);
        while (await this.fill()) this.buffer = new Uint8Array(0);
        return;
      }
      let i = 0;
      while (i < line.length && (line[i] === 0x20 || line[i] === 0x09)) i++; // transport padding
      if (i + 2 <= line.length) {
        if (line[i] !== 0x0d || line[i + 1] !== 0x0a)
          throw new ValidationError("a multipart boundary must be followed by a line break (CRLF)");
        this.buffer = line.subarray(i + 2);
        this.state = "headers";
        return;
      }
      if (line.length > 256)
        throw new ValidationError("a multipart boundary must be followed by a line break (CRLF)");
      if (!(await this.fill()))
        throw new ValidationError(
          "the multipart body ended after a boundary (no closing boundary)",
        );
    }
  }

  private async readHeaders(): Promise<MultipartPart> {
    for (;;) {
      // A part may have no headers at all: its header block is then just the blank line.
      const end = startsWith(this.buffer, CRLF) ? 0 : indexOf(this.buffer, HEADER_END, 0);
      if (end >= 0) {
        const block = decoder.decode(this.buffer.subarray(0, end));
        this.buffer = this.buffer.subarray(end === 0 ? 2 : end + HEADER_END.length);
        this.state = "body";
        return parsePartHeaders(block);
      }
      if (this.buffer.length > this.maxHeaderBytes)
        throw new ValidationError(`a part's headers are longer than ${this.maxHeaderBytes} bytes`);
      if (!(await this.fill()))
        throw new ValidationError(
          "the multipart body ended in a part's headers (no closing boundary)",
        );
    }
  }

  /** Appends the next chunk of the request to the buffer; false at the end of the request. */
  private async fill(): Promise<boolean> {
    if (this.sourceDone) return false;
    const value = await this.readSource();
    if (!value) return false;
    this.bytesRead += value.length;
    if (this.bytesRead > this.maxBodyBytes) {
      await this.cancel();
      throw new PayloadTooLargeError(`request body is larger than ${this.maxBodyBytes} bytes`);
    }
    this.buffer =
      this.buffer.length === 0
        ? value
        : concat([this.buffer, value], this.buffer.length + value.length);
    return true;
  }

  private async readSource(): Promise<Uint8Array | null> {
    if (!(this.source instanceof ReadableStreamBYOBReader)) {
      const { done, value } = await this.source.read();
      this.sourceDone = done;
      return done ? null : value;
    }
    // A fresh buffer each time: the chunks handed out are views into it. readAtLeast (workerd's
    // form of the standard `read(view, {min})`) waits for a full one, except at the end, where the
    // last bytes may come together with `done`.
    const { done, value } = await this.source.readAtLeast(READ_BYTES, new Uint8Array(READ_BYTES));
    this.sourceDone = done;
    return value && value.byteLength > 0 ? value : null;
  }
}

/**
 * workerd hands a request body to a default reader in chunks of about 4 KiB, each a trip through
 * the event loop; a BYOB reader asking for at least READ_BYTES at a time makes 16x fewer trips.
 * Streams that are not byte streams (built in JavaScript) are read with the default reader.
 */
const READ_BYTES = 64 * 1024;

function byteReader(body: ReadableStream<Uint8Array>): ReadableStreamBYOBReader | null {
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    return null;
  }
}

const HEADER_END = encoder.encode("\r\n\r\n");

function parsePartHeaders(block: string): MultipartPart {
  let disposition: string | null = null;
  let contentType: string | null = null;
  for (const line of block === "" ? [] : block.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon <= 0 || /^\s/.test(line))
      throw new ValidationError(
        `a part has a malformed header line: ${JSON.stringify(line.slice(0, 80))}`,
      );
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition = value;
    else if (name === "content-type") contentType = value;
  }
  if (!disposition || !/^form-data\s*(;|$)/i.test(disposition))
    throw new ValidationError(
      'every part needs a `Content-Disposition: form-data; name="..."` header',
    );
  const params = dispositionParams(disposition);
  const name = params.get("name");
  if (name === undefined || name === "")
    throw new ValidationError("a part's Content-Disposition has no field name");
  return { name, filename: params.get("filename") ?? null, contentType };
}

/**
 * `name` and `filename` of a Content-Disposition. Quoted values end at the next quote: browsers
 * percent-encode quotes and line breaks in names (WHATWG HTML, multipart/form-data encoding) and
 * send backslashes as they are, so backslash escapes are not interpreted.
 */
function dispositionParams(value: string): Map<string, string> {
  const params = new Map<string, string>();
  const pattern = /;\s*([A-Za-z0-9_*-]+)\s*=\s*(?:"([^"]*)"|([^;\s"]*))/g;
  for (let match = pattern.exec(value); match; match = pattern.exec(value)) {
    const key = match[1]!.toLowerCase();
    if (!params.has(key)) params.set(key, match[2] ?? match[3] ?? "");
  }
  return params;
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function startsWith(haystack: Uint8Array, prefix: Uint8Array): boolean {
  if (haystack.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (haystack[i] !== prefix[i]) return false;
  return true;
}

/** First index of `needle` in `haystack` from `from`, or -1 (the first byte found natively). */
export function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0]!;
  const last = haystack.length - needle.length;
  for (
    let i = haystack.indexOf(first, from);
    i !== -1 && i <= last;
    i = haystack.indexOf(first, i + 1)
  ) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** How many bytes at the end of `haystack` are a proper prefix of `needle` (0 when none). */
export function partialMatchLength(haystack: Uint8Array, needle: Uint8Array): number {
  // Only a position holding the needle's first byte (a CR) can start one; the earliest wins.
  const first = needle[0]!;
  for (
    let start = haystack.indexOf(first, Math.max(0, haystack.length - needle.length + 1));
    start !== -1;
    start = haystack.indexOf(first, start + 1)
  ) {
    const length = haystack.length - start;
    let j = 1;
    while (j < length && haystack[start + j] === needle[j]) j++;
    if (j === length) return length;
  }
  return 0;
}
