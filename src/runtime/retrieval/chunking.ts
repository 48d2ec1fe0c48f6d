// Splits a document into overlapping chunks measured in model tokens (the real tokenizer), at the
// most natural boundary that fits: a markdown section, then a paragraph, a sentence, and only as a
// last resort words. Each chunk carries its heading path so a fragment read alone still says
// where it came from, and overlaps the previous one so a fact split across a boundary survives.
import type { TokenCounter } from "../util/tokens.ts";

export interface ChunkOptions {
  /** Largest chunk, in tokens. */
  maxTokens: number;
  /** Tokens of the previous chunk repeated at the start of the next. */
  overlapTokens: number;
  format: "text" | "markdown";
}

export interface Chunk {
  text: string;
  /** 0-based position in the document. */
  position: number;
  /** Markdown heading path ("Setup > Install"), empty for plain text. */
  heading: string;
  tokens: number;
}

export const DEFAULT_CHUNK_OPTIONS: ChunkOptions = {
  maxTokens: 400,
  overlapTokens: 60,
  format: "text",
};

interface Segment {
  text: string;
  heading: string;
  tokens: number;
}

export function chunkDocument(
  text: string,
  tokens: TokenCounter,
  options: ChunkOptions = DEFAULT_CHUNK_OPTIONS,
): Chunk[] {
  if (options.overlapTokens >= options.maxTokens)
    throw new RangeError("overlapTokens must be smaller than maxTokens");
  const segments: Segment[] = [];
  for (const block of blocks(text.replace(/\r\n?/g, "\n"), options.format)) {
    for (const piece of fit(block.text, tokens, options.maxTokens)) {
      segments.push({ text: piece, heading: block.heading, tokens: tokens.count(piece) });
    }
  }
  const chunks: Chunk[] = [];
  /** Segments of the chunk being built; the first `carried` of them repeat the previous chunk. */
  let current: Segment[] = [];
  let carried = 0;
  // Paragraph separators cost a token each when the chunk is joined back together.
  const tokensOf = (list: Segment[]) => list.reduce((sum, s) => sum + s.tokens + 1, 0);
  const emit = () => {
    const body = current.map((s) => s.text).join("\n\n");
    chunks.push({
      text: body,
      position: chunks.length,
      heading: current[current.length - 1]!.heading,
      tokens: tokens.count(body),
    });
  };
  for (const segment of segments) {
    const last = current[current.length - 1];
    const newSection =
      options.format === "markdown" && last !== undefined && last.heading !== segment.heading;
    if (last && (newSection || tokensOf(current) + segment.tokens > options.maxTokens)) {
      if (current.length > carried) emit();
      // The tail of what was just emitted opens the next chunk, whole segments only; a new
      // markdown section starts clean.
      const tail: Segment[] = [];
      if (!newSection) {
        for (let i = current.length - 1; i >= 0; i--) {
          const candidate = current[i]!;
          if (tokensOf(tail) + candidate.tokens > options.overlapTokens) break;
          if (tokensOf(tail) + candidate.tokens + 1 + segment.tokens + 1 > options.maxTokens) break;
          tail.unshift(candidate);
        }
      }
      current = tail;
      carried = tail.length;
    }
    current.push(segment);
  }
  if (current.length > carried) emit();
  return chunks;
}

/** Paragraph blocks with their heading path; markdown headings start a new path. */
function blocks(
  text: string,
  format: ChunkOptions["format"],
): Array<{ text: string; heading: string }> {
  const out: Array<{ text: string; heading: string }> = [];
  const path: string[] = [];
  let paragraph: string[] = [];
  let inFence = false;
  const push = () => {
    const body = paragraph.join("\n").trim();
    if (body) out.push({ text: body, heading: path.filter(Boolean).join(" > ") });
    paragraph = [];
  };
  for (const line of text.split("\n")) {
    if (format === "markdown" && /^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const heading =
      format === "markdown" && !inFence ? /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line) : null;
    if (heading) {
      push();
      const level = heading[1]!.length;
      path.length = level - 1;
      path[level - 1] = heading[2]!;
      continue;
    }
    if (!inFence && line.trim() === "") {
      push();
      continue;
    }
    paragraph.push(line);
  }
  push();
  return out;
}

/** Splits a block that is too long: by sentences, then by words. */
function fit(text: string, tokens: TokenCounter, maxTokens: number): string[] {
  if (tokens.count(text) <= maxTokens) return [text];
  const sentences = text.match(/[^.!?\n]+(?:[.!?]+["')\]]*|\n|$)\s*/g) ?? [text];
  const out: string[] = [];
  let current = "";
  for (const raw of sentences) {
    const sentence = raw.trim();
    if (!sentence) continue;
    if (tokens.count(sentence) > maxTokens) {
      if (current) out.push(current);
      current = "";
      out.push(...byWords(sentence, tokens, maxTokens));
      continue;
    }
    const joined = current ? `${current} ${sentence}` : sentence;
    if (tokens.count(joined) > maxTokens) {
      out.push(current);
      current = sentence;
    } else {
      current = joined;
    }
  }
  if (current) out.push(current);
  return out;
}

function byWords(text: string, tokens: TokenCounter, maxTokens: number): string[] {
  const out: string[] = [];
  let current: string[] = [];
  for (const word of text.split(/\s+/)) {
    if (current.length > 0 && tokens.count([...current, word].join(" ")) > maxTokens) {
      out.push(current.join(" "));
      current = [];
    }
    current.push(word);
  }
  if (current.length > 0) out.push(current.join(" "));
  // A single "word" longer than the budget (a URL, base64) is cut by characters.
  return out.flatMap((piece) =>
    tokens.count(piece) > maxTokens ? byChars(piece, tokens, maxTokens) : [piece],
  );
}

function byChars(text: string, tokens: TokenCounter, maxTokens: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(text.length, start + maxTokens * 4);
    while (end > start + 1 && tokens.count(text.slice(start, end)) > maxTokens)
      end = start + Math.floor((end - start) * 0.8);
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}
