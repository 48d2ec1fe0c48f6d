// The one file sniffer (src/media/sniff.ts), in plain Node: what a chat attachment is (an image by
// its first bytes, text by decoding it), what a recording is, and the file name kept in R2 keys.
// Discord's and Telegram's ingest use it end to end (test/surfaces/discord/discord-attachments,
// test/surfaces/telegram/telegram-media).
import { describe, expect, it } from "vitest";
import { safeFileName, sniffAudioType, sniffChatFile } from "../../src/media/sniff.ts";

const PNG = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4,
]);
const text = (value: string) => new TextEncoder().encode(value);

describe("Sniffing a chat attachment", () => {
  it("recognises images by their first bytes and text by decoding it", () => {
    expect(sniffChatFile(new Uint8Array([0xff, 0xd8, 0xff, 0xe0]), "a.bin")?.contentType).toBe(
      "image/jpeg",
    );
    expect(sniffChatFile(PNG, "a")?.contentType).toBe("image/png");
    expect(sniffChatFile(text("GIF89a...."), "a")?.contentType).toBe("image/gif");
    expect(sniffChatFile(text("RIFF\0\0\0\0WEBPVP8 "), "a")?.contentType).toBe("image/webp");
    expect(sniffChatFile(text("hello"), "a.txt")?.kind).toBe("text");
    expect(sniffChatFile(text("hello"), "a.exe")).toBeNull();
    expect(sniffChatFile(new Uint8Array([0x68, 0x00, 0x69]), "a.txt")).toBeNull();
    expect(sniffChatFile(new Uint8Array([0xc3, 0x28]), "a.txt")).toBeNull();
  });

  it("tries text when the declared type says so, and never takes a PDF named .txt as text", () => {
    expect(sniffChatFile(text("{}"), "data", "application/json")).toEqual({
      kind: "text",
      contentType: "text/plain; charset=utf-8",
    });
    expect(sniffChatFile(text("notes"), "notes", "text/markdown")?.kind).toBe("text");
    expect(sniffChatFile(text("%PDF-1.7\n"), "a.txt")).toBeNull();
  });
});

describe("Sniffing a recording", () => {
  it("names the formats voice notes and audio files come in", () => {
    expect(sniffAudioType(text("OggS\0\x02"))).toBe("audio/ogg");
    expect(sniffAudioType(text("ID3\x03"))).toBe("audio/mpeg");
    expect(sniffAudioType(new Uint8Array([0xff, 0xfb, 0x90]))).toBe("audio/mpeg");
    expect(sniffAudioType(text("\0\0\0\x20ftypM4A "))).toBe("audio/mp4");
    expect(sniffAudioType(text("RIFF\0\0\0\0WAVEfmt "))).toBe("audio/wav");
    expect(sniffAudioType(text("fLaC\0"))).toBe("audio/flac");
    expect(sniffAudioType(new Uint8Array([0x1a, 0x45, 0xdf, 0xa3]))).toBe("audio/webm");
    expect(sniffAudioType(text("hello"))).toBeNull();
  });
});

describe("A file name kept in an R2 key", () => {
  it("keeps letters, digits, dots, dashes and underscores, and never starts with a dot", () => {
    expect(safeFileName("my photo (1).png")).toBe("my_photo_1_.png");
    expect(safeFileName("../../etc/passwd")).toBe("etc_passwd");
    expect(safeFileName("...")).toBe("file");
    expect(safeFileName("a".repeat(200))).toHaveLength(100);
  });
});
