// The streaming multipart/form-data reader (src/media/multipart.ts): what it hands out must not
// depend on how the body is cut into chunks (a boundary split across two reads, a CR at the end
// of one), it follows RFC 2046's framing (preamble, transport padding, epilogue), and every
// malformed body is a ValidationError saying what is wrong, never a hang or a crash.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  MultipartReader,
  multipartBoundary,
  type MultipartPart,
} from "../../src/media/multipart.ts";
import { PayloadTooLargeError, ValidationError } from "../../src/runtime/util/errors.ts";

const BOUNDARY = "----edgeAgentsBoundary7MA4YWxk";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  body: Uint8Array;
}

function bytes(text: string): Uint8Array {
  return encoder.encode(text);
}

/** A body the way browsers and curl write it. */
function encode(parts: Part[], boundary = BOUNDARY): Uint8Array {
  const out: Uint8Array[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.filename !== undefined) head += `; filename="${part.filename}"`;
    if (part.contentType) head += `\r\nContent-Type: ${part.contentType}`;
    out.push(bytes(`${head}\r\n\r\n`), part.body, bytes("\r\n"));
  }
  out.push(bytes(`--${boundary}--\r\n`));
  return join(out);
}

function join(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * The body as a stream cut at the given offsets: a byte stream (read with a BYOB reader, as
 * workerd's request bodies are) or a plain one (read with the default reader).
 */
function streamOf(
  body: Uint8Array,
  cuts: number[] = [],
  kind: "bytes" | "plain" = "plain",
): ReadableStream<Uint8Array> {
  const points = [
    ...new Set([0, ...cuts.filter((cut) => cut > 0 && cut < body.length), body.length]),
  ].sort((a, b) => a - b);
  let i = 0;
  const pull = (
    controller: ReadableStreamDefaultController<Uint8Array> | ReadableByteStreamController,
  ) => {
    if (i + 1 >= points.length) return controller.close();
    controller.enqueue(body.slice(points[i], points[i + 1]));
    i++;
  };
  return kind === "bytes"
    ? new ReadableStream({ type: "bytes", pull })
    : new ReadableStream({ pull });
}

function everyBytes(body: Uint8Array, size: number): number[] {
  return Array.from({ length: Math.ceil(body.length / size) }, (_, i) => i * size);
}

async function readAll(
  stream: ReadableStream<Uint8Array>,
  options: { boundary?: string; maxBodyBytes?: number; maxHeaderBytes?: number } = {},
) {
  const reader = new MultipartReader(stream, options.boundary ?? BOUNDARY, {
    maxBodyBytes: options.maxBodyBytes ?? 1 << 30,
    maxHeaderBytes: options.maxHeaderBytes,
  });
  const parts: Array<MultipartPart & { body: Uint8Array }> = [];
  for (let part = await reader.nextPart(); part; part = await reader.nextPart()) {
    const chunks: Uint8Array[] = [];
    for (let chunk = await reader.readChunk(); chunk; chunk = await reader.readChunk())
      chunks.push(chunk.slice());
    parts.push({ ...part, body: join(chunks) });
  }
  return parts;
}

async function refusal(
  body: Uint8Array | string,
  options: Parameters<typeof readAll>[1] = {},
  cuts: number[] = [],
): Promise<Error> {
  const raw = typeof body === "string" ? bytes(body) : body;
  try {
    await readAll(streamOf(raw, cuts), options);
  } catch (error) {
    return error as Error;
  }
  throw new Error("the body was accepted");
}

const SAMPLE: Part[] = [
  { name: "caption", body: bytes("Golden hour\r\n#sunset") },
  {
    name: "file",
    filename: "a.jpg",
    contentType: "image/jpeg",
    body: Uint8Array.from({ length: 300 }, (_, i) => (i * 13) % 256),
  },
  // Data that looks like the start of a delimiter, without being one.
  {
    name: "file",
    filename: "tricky.bin",
    body: bytes(`\r\n--${BOUNDARY.slice(0, 10)}\r\r\n-\r\n--x\r`),
  },
  { name: "publish", body: bytes("false") },
  { name: "altText", body: new Uint8Array(0) },
];

function expectSample(parts: Array<MultipartPart & { body: Uint8Array }>): void {
  expect(
    parts.map((part) => ({
      name: part.name,
      filename: part.filename,
      contentType: part.contentType,
    })),
  ).toEqual([
    { name: "caption", filename: null, contentType: null },
    { name: "file", filename: "a.jpg", contentType: "image/jpeg" },
    { name: "file", filename: "tricky.bin", contentType: null },
    { name: "publish", filename: null, contentType: null },
    { name: "altText", filename: null, contentType: null },
  ]);
  for (const [i, part] of parts.entries()) expect(part.body, part.name).toEqual(SAMPLE[i]!.body);
}

describe("multipart reader", () => {
  it("reads fields and files the same whatever the chunk size, a boundary split across chunks included", async () => {
    const body = encode(SAMPLE);
    for (const kind of ["plain", "bytes"] as const) {
      for (const size of [1, 2, 3, 5, 7, 16, 31, 64, 1000, body.length])
        expectSample(await readAll(streamOf(body, everyBytes(body, size), kind)));
    }
  });

  it("reads any parts, cut anywhere, back exactly (property)", async () => {
    const binary = fc
      .uint8Array({ maxLength: 400 })
      .map((data) => data.map((byte) => [0x0d, 0x0a, 0x2d, byte][byte % 4]!));
    const part = fc.record({
      name: fc.constantFrom("file", "caption", "x y", "ü"),
      filename: fc.option(fc.constantFrom("a.jpg", "", "C:\\photos\\b.jpg"), { nil: undefined }),
      body: binary,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(part, { maxLength: 5 }),
        fc.array(fc.nat(3000), { maxLength: 12 }),
        fc.constantFrom("plain", "bytes" as const),
        async (parts, cuts, kind) => {
          const read = await readAll(streamOf(encode(parts), cuts, kind));
          expect(read.map((p) => [p.name, p.filename, p.body])).toEqual(
            parts.map((p) => [p.name, p.filename ?? null, p.body]),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it("reads a body larger than one read of a byte stream, cut into network-sized chunks", async () => {
    const file = Uint8Array.from(
      { length: 300_000 },
      (_, i) => [0x0d, 0x0a, 0x2d, i % 251][i % 7 === 0 ? i % 3 : 3]!,
    );
    const body = encode([
      { name: "file", filename: "big.bin", body: file },
      { name: "caption", body: bytes("after") },
    ]);
    const parts = await readAll(streamOf(body, everyBytes(body, 4096), "bytes"));
    expect(parts.map((p) => p.name)).toEqual(["file", "caption"]);
    expect(parts[0]!.body).toEqual(file);
    expect(decoder.decode(parts[1]!.body)).toBe("after");
  });

  it("keeps a file's own trailing CR LF: only the line break before the boundary belongs to it", async () => {
    const parts = await readAll(
      streamOf(encode([{ name: "file", filename: "a.txt", body: bytes("line\r\n\r\n") }])),
    );
    expect(decoder.decode(parts[0]!.body)).toBe("line\r\n\r\n");
  });

  it("ignores a preamble, transport padding after a boundary and an epilogue (RFC 2046)", async () => {
    const body = `This is the preamble.\r\n--${BOUNDARY}  \t\r\nContent-Disposition: form-data; name="caption"\r\n\r\nhi\r\n--${BOUNDARY}--\r\nthe epilogue, ignored`;
    for (const size of [1, 4, body.length]) {
      const parts = await readAll(streamOf(bytes(body), everyBytes(bytes(body), size)));
      expect(parts.map((p) => [p.name, decoder.decode(p.body)])).toEqual([["caption", "hi"]]);
    }
  });

  it("reads quoted names as browsers send them, and header names in any case", async () => {
    const body = `--${BOUNDARY}\r\ncontent-TYPE: image/jpeg\r\nCONTENT-DISPOSITION: form-data; filename="C:\\dir\\ü.jpg"; name="file"\r\n\r\nx\r\n--${BOUNDARY}--`;
    const [part] = await readAll(streamOf(bytes(body)));
    expect(part).toMatchObject({
      name: "file",
      filename: "C:\\dir\\ü.jpg",
      contentType: "image/jpeg",
    });
  });

  it("skips what is left of a part when the next one is asked for", async () => {
    const reader = new MultipartReader(
      streamOf(encode(SAMPLE), everyBytes(encode(SAMPLE), 7)),
      BOUNDARY,
      { maxBodyBytes: 1 << 20 },
    );
    const names: string[] = [];
    for (let part = await reader.nextPart(); part; part = await reader.nextPart())
      names.push(part.name);
    expect(names).toEqual(["caption", "file", "file", "publish", "altText"]);
  });

  it("refuses malformed bodies with a clear reason", async () => {
    const cases: Array<[string, RegExp]> = [
      [
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="caption"\r\n\r\nno end`,
        /ended in the middle of a part \(no closing boundary\)/,
      ],
      [
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="caption"\r\n`,
        /ended in a part's headers/,
      ],
      [`--${BOUNDARY}`, /ended after a boundary/],
      ["", /not multipart\/form-data with the boundary/],
      [
        `--other\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n--other--`,
        /not multipart\/form-data with the boundary/,
      ],
      // Bare LF line breaks (RFC 2046 wants CRLF): the boundary line does not end properly.
      [
        `--${BOUNDARY}\nContent-Disposition: form-data; name="a"\n\nx\n--${BOUNDARY}--\n`,
        /followed by a line break \(CRLF\)/,
      ],
      [
        `--${BOUNDARY}X\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n--${BOUNDARY}--`,
        /followed by a line break \(CRLF\)/,
      ],
      [`--${BOUNDARY}\r\n\r\nx\r\n--${BOUNDARY}--`, /Content-Disposition: form-data; name=/],
      [
        `--${BOUNDARY}\r\nContent-Disposition: attachment; name="a"\r\n\r\nx\r\n--${BOUNDARY}--`,
        /Content-Disposition: form-data; name=/,
      ],
      [
        `--${BOUNDARY}\r\nContent-Disposition: form-data; filename="a.jpg"\r\n\r\nx\r\n--${BOUNDARY}--`,
        /no field name/,
      ],
      [
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\n folded\r\n\r\nx\r\n--${BOUNDARY}--`,
        /malformed header line/,
      ],
      [
        `--${BOUNDARY}\r\nnot a header\r\n\r\nx\r\n--${BOUNDARY}--`,
        /malformed header line: "not a header"/,
      ],
    ];
    for (const [body, reason] of cases) {
      for (const cuts of [[], everyBytes(bytes(body), 3)]) {
        const error = await refusal(body, {}, cuts);
        expect(error, `${JSON.stringify(body)}: ${error.message}`).toBeInstanceOf(ValidationError);
        expect(error.message).toMatch(reason);
      }
    }
  });

  it("refuses endless part headers and a body over the limit as it streams", async () => {
    const long = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="a"\r\nX-Pad: ${"p".repeat(10_000)}\r\n\r\nx\r\n--${BOUNDARY}--`;
    expect(
      (await refusal(long, { maxHeaderBytes: 1024 }, everyBytes(bytes(long), 100))).message,
    ).toMatch(/headers are longer than 1024 bytes/);
    const big = encode([{ name: "file", filename: "a.bin", body: new Uint8Array(5000) }]);
    const error = await refusal(big, { maxBodyBytes: 4096 }, everyBytes(big, 1000));
    expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect(error.message).toBe("request body is larger than 4096 bytes");
  });

  it("finds the boundary in a Content-Type", () => {
    expect(multipartBoundary(`multipart/form-data; boundary=${BOUNDARY}`)).toBe(BOUNDARY);
    expect(multipartBoundary('Multipart/Form-Data; charset=utf-8; boundary="a b:c"')).toBe("a b:c");
    expect(multipartBoundary("multipart/form-data")).toBeNull();
    expect(multipartBoundary("multipart/mixed; boundary=x")).toBeNull();
    expect(multipartBoundary("application/json")).toBeNull();
    expect(multipartBoundary(`multipart/form-data; boundary=${"x".repeat(71)}`)).toBeNull();
    expect(multipartBoundary(null)).toBeNull();
  });
});
