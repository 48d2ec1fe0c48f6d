// The content check as a file streams in (src/media/validate.ts): the verdict does not depend on
// how the file is cut into chunks, a JPEG's frame header is found behind large metadata segments,
// and what can be refused early (type, aspect ratio, size cap) is refused before the file ends.
import { describe, expect, it } from "vitest";
import { checkMedia, MAX_IMAGE_BYTES, MediaCheckStream } from "../../src/media/validate.ts";

/** SOI, an APP1 (EXIF-sized) and an APP2 segment, fill bytes, the frame header, a scan, EOI. */
function jpeg(
  width: number,
  height: number,
  options: { app?: number; pad?: number; truncated?: boolean } = {},
): Uint8Array {
  const app = options.app ?? 60_000;
  const segment = (marker: number, length: number) => [
    0xff,
    marker,
    length >> 8,
    length & 0xff,
    ...Array.from({ length: length - 2 }, (_, i) => (i * 11) % 256),
  ];
  return new Uint8Array([
    0xff,
    0xd8,
    ...segment(0xe1, app),
    ...segment(0xe2, 1_000),
    0xff,
    0xff, // a fill byte before the next marker
    0xff,
    0xc2,
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
    ...Array.from({ length: options.pad ?? 500 }, (_, i) => (i * 7) % 255),
    ...(options.truncated ? [] : [0xff, 0xd9]),
  ]);
}

function streamed(bytes: Uint8Array, size: number, name = "the file") {
  const check = new MediaCheckStream(name);
  let early: { reason: string; at: number } | null = null;
  for (let at = 0; at < bytes.length && !early; at += size) {
    const reason = check.push(bytes.subarray(at, at + size));
    if (reason) early = { reason, at: at + size };
  }
  return { early, verdict: check.finish() };
}

describe("media check, streamed", () => {
  it("finds the frame header behind large segments, whatever the chunk size", () => {
    const photo = jpeg(1080, 1350);
    expect(checkMedia(photo)).toEqual({
      ok: true,
      kind: "image",
      contentType: "image/jpeg",
      width: 1080,
      height: 1350,
    });
    for (const size of [1, 2, 3, 5, 13, 4096, 65_536])
      expect(streamed(photo, size)).toEqual({ early: null, verdict: checkMedia(photo) });
  });

  it("refuses a wrong aspect ratio as soon as the frame header has arrived", () => {
    const wide = jpeg(2000, 200, { pad: 200_000 });
    const { early, verdict } = streamed(wide, 4096);
    expect(early!.reason).toBe(
      "the file is 2000x200 (aspect ratio 10.00:1); Instagram takes 4:5 (0.80) to 1.91:1",
    );
    expect(early!.at).toBeLessThan(70_000);
    expect(verdict).toEqual({ ok: false, reason: early!.reason });
  });

  it("refuses an image past 8 MiB while it streams, not after", () => {
    const huge = jpeg(1080, 1080, { pad: MAX_IMAGE_BYTES });
    const { early } = streamed(huge, 65_536);
    expect(early!.reason).toMatch(
      /is over 8388608 bytes; Instagram takes images of at most 8388608 bytes/,
    );
    expect(early!.at).toBeLessThanOrEqual(MAX_IMAGE_BYTES + 65_536);
  });

  it("knows a JPEG is truncated or has no frame header only at its end", () => {
    const cut = streamed(jpeg(1080, 1080, { truncated: true }), 7, "cut.jpg");
    expect(cut).toEqual({
      early: null,
      verdict: {
        ok: false,
        reason: "cut.jpg is a truncated JPEG (it does not end with the end-of-image marker)",
      },
    });
    const headless = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, ...new Array(14).fill(0)]);
    expect(streamed(headless, 3).verdict).toEqual({
      ok: false,
      reason: "the file is not a complete JPEG (no frame header found)",
    });
    const scanFirst = new Uint8Array([
      0xff,
      0xd8,
      0xff,
      0xda,
      0x00,
      0x0c,
      ...new Array(20).fill(1),
    ]);
    expect(streamed(scanFirst, 2).early!.reason).toMatch(/no frame header found/);
  });

  it("tells the type from the first bytes, even when they come one at a time", () => {
    const png = new Uint8Array([
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 1, 2, 3,
    ]);
    const { early } = streamed(png, 1, "photo.jpg");
    expect(early).toEqual({
      reason: "photo.jpg is a PNG image; Instagram takes JPEG photos and MP4 videos only",
      at: 12,
    });
    const mp4 = new Uint8Array([
      0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0,
    ]);
    expect(streamed(mp4, 1).verdict).toEqual({ ok: true, kind: "video", contentType: "video/mp4" });
    expect(new MediaCheckStream("empty.jpg").finish()).toEqual({
      ok: false,
      reason: "empty.jpg is empty",
    });
  });
});
