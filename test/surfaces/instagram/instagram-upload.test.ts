// Uploads stream into R2: a photo larger than one R2 part goes up as a multipart upload without
// the request being buffered, fields may come before or after the files, and a file refused
// halfway (or a malformed body) leaves nothing behind: no object, no open multipart upload, no
// post in D1. Requests are sent as streams without Content-Length, cut into small chunks.
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ADMIN_TOKEN, createTestAgent, json } from "../../helpers/api.ts";

const BOUNDARY = "----uploadTestBoundary0123";
const MiB = 1024 * 1024;
const encoder = new TextEncoder();

afterEach(() => {
  vi.restoreAllMocks();
});

/** A JPEG of `bytes` bytes: SOI, frame header, scan, varied filler, EOI (or none when truncated). */
function jpeg(
  bytes: number,
  options: { width?: number; height?: number; truncated?: boolean; seed?: number } = {},
): Uint8Array {
  const { width = 1080, height = 1080, seed = 1 } = options;
  const head = [
    0xff,
    0xd8,
    0xff,
    0xc0,
    0x00,
    0x11,
    0x08,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    0x03,
    0x01,
    0x22,
    0x00,
    0x02,
    0x11,
    0x01,
    0x03,
    0x11,
    0x01,
    0xff,
    0xda,
    0x00,
    0x0c,
    0x03,
    0x01,
    0x00,
    0x02,
    0x11,
    0x03,
    0x11,
    0x00,
    0x3f,
    0x00,
  ];
  const out = new Uint8Array(bytes);
  out.set(head);
  for (let i = head.length; i < bytes; i++) out[i] = (i * 31 + seed * 7 + (i >> 11)) & 0xff;
  if (!options.truncated) out.set([0xff, 0xd9], bytes - 2);
  else if (out[bytes - 2] === 0xff && out[bytes - 1] === 0xd9) out[bytes - 1] = 0;
  return out;
}

type Part = { file: Uint8Array; name?: string } | { field: string; value: string };

function body(parts: Part[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const part of parts) {
    if ("file" in part) {
      out.push(
        encoder.encode(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${part.name ?? "photo.jpg"}"\r\nContent-Type: image/jpeg\r\n\r\n`,
        ),
        part.file,
      );
    } else {
      out.push(
        encoder.encode(
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${part.field}"\r\n\r\n${part.value}`,
        ),
      );
    }
    out.push(encoder.encode("\r\n"));
  }
  out.push(encoder.encode(`--${BOUNDARY}--\r\n`));
  return out;
}

/** The pieces as a stream of 64 KiB chunks (no Content-Length), as a slow client would send them. */
function streamOf(pieces: Uint8Array[]): ReadableStream<Uint8Array> {
  const queue = [...pieces];
  return new ReadableStream({
    pull(controller) {
      const next = queue.shift();
      if (!next) return controller.close();
      if (next.length > 65_536) queue.unshift(next.subarray(65_536));
      controller.enqueue(next.slice(0, 65_536));
    },
  });
}

async function post(
  agentId: string,
  pieces: Uint8Array[],
  contentType = `multipart/form-data; boundary=${BOUNDARY}`,
) {
  const response = await exports.default.fetch(
    new Request(`https://agents.test/agents/${agentId}/media`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": contentType },
      body: streamOf(pieces),
    }),
  );
  return {
    status: response.status,
    body: await json<{ postId: string; status: string; error?: { code: string; message: string } }>(
      response,
    ),
  };
}

async function postView(agentId: string, postId: string) {
  const response = await exports.default.fetch(
    new Request(`https://agents.test/agents/${agentId}/media/${postId}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }),
  );
  return json<{
    status: string;
    caption: string;
    items: Array<{
      key: string;
      bytes: number;
      sha256: string;
      contentType: string;
      width?: number;
    }>;
  }>(response);
}

async function sha256(bytes: Uint8Array): Promise<string> {
  return Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

async function nothingKept(agentId: string): Promise<void> {
  expect(
    (await env.MEDIA.list({ prefix: `media/${agentId}/` })).objects.map((object) => object.key),
  ).toEqual([]);
  expect(
    (await env.DB.prepare("SELECT count(*) AS n FROM media_posts WHERE agent_id = ?")
      .bind(agentId)
      .first<{ n: number }>())!.n,
  ).toBe(0);
}

/** Records the multipart uploads the worker opens, to prove afterwards that none is left open. */
function watchMultipartUploads(): Array<{ key: string; uploadId: string }> {
  const opened: Array<{ key: string; uploadId: string }> = [];
  const create = env.MEDIA.createMultipartUpload.bind(env.MEDIA);
  vi.spyOn(env.MEDIA, "createMultipartUpload").mockImplementation(async (key, options) => {
    const upload = await create(key, options);
    opened.push({ key: upload.key, uploadId: upload.uploadId });
    return upload;
  });
  return opened;
}

describe("streamed uploads", () => {
  it("streams a photo larger than one R2 part into R2 byte for byte, with its SHA-256 in the post", async () => {
    const agentId = await createTestAgent();
    const opened = watchMultipartUploads();
    const photo = jpeg(7 * MiB + 12_345, { width: 1080, height: 1350 });
    const small = jpeg(300_000, { seed: 2 });
    const { status, body: answer } = await post(
      agentId,
      body([{ file: photo }, { file: small }, { field: "publish", value: "false" }]),
    );
    expect(status).toBe(202);
    const view = await postView(agentId, answer.postId);
    expect(view.items).toMatchObject([
      { bytes: photo.length, sha256: await sha256(photo), contentType: "image/jpeg", width: 1080 },
      { bytes: small.length, sha256: await sha256(small), contentType: "image/jpeg" },
    ]);
    expect(opened.map((upload) => upload.key)).toEqual([view.items[0]!.key]);
    const large = await env.MEDIA.get(view.items[0]!.key);
    expect(large!.httpMetadata?.contentType).toBe("image/jpeg");
    expect(new Uint8Array(await large!.arrayBuffer())).toEqual(photo);
    // One part: a single put, with its hash in the object's metadata as well.
    const one = await env.MEDIA.get(view.items[1]!.key);
    expect(one!.customMetadata?.sha256).toBe(await sha256(small));
    expect(new Uint8Array(await one!.arrayBuffer())).toEqual(small);
  });

  it("takes the text fields before the files as well as after them", async () => {
    const agentId = await createTestAgent();
    const { status, body: answer } = await post(
      agentId,
      body([
        { field: "caption", value: "Fields first #early" },
        { field: "publish", value: "false" },
        { file: jpeg(50_000) },
      ]),
    );
    expect(status).toBe(202);
    expect(answer.status).toBe("stored");
    expect(await postView(agentId, answer.postId)).toMatchObject({
      status: "stored",
      caption: "Fields first #early",
    });
  });

  it("a file refused mid-stream leaves nothing in R2 or D1, and no multipart upload open", async () => {
    const agentId = await createTestAgent();
    const opened = watchMultipartUploads();
    const cases: Array<[Part[], RegExp]> = [
      // The first photo is stored before the second is refused at its end.
      [
        [{ file: jpeg(100_000) }, { file: jpeg(7 * MiB, { truncated: true }), name: "cut.jpg" }],
        /file 2 \(cut\.jpg\) is a truncated JPEG/,
      ],
      // Refused as the 8 MiB cap is passed, with a part already in R2.
      [
        [{ file: jpeg(100_000) }, { file: jpeg(9 * MiB), name: "huge.jpg" }],
        /file 2 \(huge\.jpg\) is over 8388608 bytes/,
      ],
      // Refused as soon as the frame header arrives.
      [
        [{ file: jpeg(6 * MiB, { width: 2000, height: 200 }), name: "wide.jpg" }],
        /2000x200 \(aspect ratio 10\.00:1\)/,
      ],
      // Everything stored, then the field after the files is wrong.
      [
        [
          { file: jpeg(6 * MiB) },
          { file: jpeg(1000) },
          { field: "generateCaption", value: "maybe" },
        ],
        /generateCaption must be true or false/,
      ],
      [
        [{ file: jpeg(6 * MiB) }, { field: "altText", value: "two photos" }, { file: jpeg(1000) }],
        /altText is for a single photo/,
      ],
    ];
    for (const [parts, reason] of cases) {
      const { status, body: answer } = await post(agentId, body(parts));
      expect(status, String(reason)).toBe(400);
      expect(answer.error!.message).toMatch(reason);
    }
    await nothingKept(agentId);
    expect(opened.length).toBeGreaterThanOrEqual(3);
    for (const { key, uploadId } of opened) {
      // An aborted or completed-then-deleted upload takes no more parts.
      await expect(
        env.MEDIA.resumeMultipartUpload(key, uploadId).uploadPart(2, "x"),
      ).rejects.toThrow();
    }
  });

  it("refuses a malformed body with a 400 saying what is wrong, keeping nothing", async () => {
    const agentId = await createTestAgent();
    const withoutEnd = body([{ file: jpeg(200_000) }, { field: "caption", value: "hi" }]).slice(
      0,
      -1,
    );
    const cases: Array<[Uint8Array[], string, RegExp]> = [
      [
        withoutEnd,
        `multipart/form-data; boundary=${BOUNDARY}`,
        /ended in the middle of a part \(no closing boundary\)/,
      ],
      [
        body([{ file: jpeg(1000) }]),
        "multipart/form-data",
        /the body must be multipart\/form-data with one or more `file` fields/,
      ],
      [
        body([{ file: jpeg(1000) }]),
        "application/octet-stream",
        /the body must be multipart\/form-data/,
      ],
      [
        body([{ file: jpeg(1000) }]),
        "multipart/form-data; boundary=not-the-one",
        /not multipart\/form-data with the boundary its Content-Type names/,
      ],
      [
        body([{ field: "caption", value: "no file" }]),
        `multipart/form-data; boundary=${BOUNDARY}`,
        /send one to ten files in `file` fields/,
      ],
      [
        body([
          { field: "caption", value: "a" },
          { field: "caption", value: "b" },
          { file: jpeg(1000) },
        ]),
        `multipart/form-data; boundary=${BOUNDARY}`,
        /send `caption` once/,
      ],
      [
        [
          encoder.encode(
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="caption"; filename="c.txt"\r\n\r\nhi\r\n--${BOUNDARY}--`,
          ),
        ],
        `multipart/form-data; boundary=${BOUNDARY}`,
        /`caption` must be text, not a file/,
      ],
      [
        [
          encoder.encode(
            `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"\r\n\r\nhi\r\n--${BOUNDARY}--`,
          ),
        ],
        `multipart/form-data; boundary=${BOUNDARY}`,
        /send one to ten files in `file` fields/,
      ],
      [
        body([{ field: "caption", value: "x".repeat(20_000) }, { file: jpeg(1000) }]),
        `multipart/form-data; boundary=${BOUNDARY}`,
        /`caption` is longer than 16384 bytes/,
      ],
    ];
    for (const [pieces, contentType, reason] of cases) {
      const { status, body: answer } = await post(agentId, pieces, contentType);
      expect(status, String(reason)).toBe(400);
      expect(answer.error).toMatchObject({
        code: "validation",
        message: expect.stringMatching(reason),
      });
    }
    await nothingKept(agentId);
  });

  it("removes the stored files when D1 cannot record the post, answering 503", async () => {
    const agentId = await createTestAgent();
    await env.DB.exec(
      "CREATE TRIGGER refuse_post BEFORE INSERT ON media_posts BEGIN SELECT RAISE(ABORT, 'injected D1 failure'); END",
    );
    try {
      const { status, body: answer } = await post(
        agentId,
        body([{ file: jpeg(6 * MiB) }, { file: jpeg(10_000) }]),
      );
      expect(status).toBe(503);
      expect(answer.error).toEqual({
        code: "upstream",
        message: "storing the upload failed; nothing was kept, try again",
      });
    } finally {
      await env.DB.exec("DROP TRIGGER refuse_post");
    }
    await nothingKept(agentId);
  });

  it("refuses a declared length over the limit before reading the body", async () => {
    const agentId = await createTestAgent();
    const response = await exports.default.fetch(
      new Request(`https://agents.test/agents/${agentId}/media`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
          "content-length": String(101 * MiB),
        },
        body: streamOf(body([{ file: jpeg(1000) }])),
      }),
    );
    expect(response.status).toBe(413);
    expect(await json(response)).toMatchObject({ error: { code: "payload_too_large" } });
    await nothingKept(agentId);
  });
});
