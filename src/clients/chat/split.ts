// Splits a reply into chat messages of at most `limit` characters (Discord's 2,000 by default;
// Telegram takes 4,096, Slack 4,000). It cuts between paragraphs first, then between sentences,
// then between words; a fenced code block is never cut open: one
// too long for a message is split between its lines, each piece closed and re-opened with the same
// language, so every message renders on its own.
export const DISCORD_MESSAGE_LIMIT = 2_000;

interface Block {
  text: string;
  /** The fence's opening line (```ts) when the block is a code block. */
  fence: string | null;
}

export function splitMessage(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  const trimmed = text.trim();
  if (trimmed.length === 0) return [];
  if (trimmed.length <= limit) return [trimmed];
  const pieces: string[] = [];
  for (const block of blocks(trimmed)) {
    if (block.fence !== null) pieces.push(...splitCode(block, limit));
    else pieces.push(...splitProse(block.text, limit));
  }
  // Greedy packing: adjacent pieces share a message while they fit, joined by a blank line.
  const messages: string[] = [];
  let current = "";
  for (const piece of pieces) {
    const joined = current === "" ? piece : `${current}\n\n${piece}`;
    if (joined.length <= limit) current = joined;
    else {
      if (current !== "") messages.push(current);
      current = piece;
    }
  }
  if (current !== "") messages.push(current);
  return messages;
}

/** Paragraphs and whole code blocks, in order. */
function blocks(text: string): Block[] {
  const out: Block[] = [];
  const lines = text.split("\n");
  let prose: string[] = [];
  const flushProse = () => {
    for (const paragraph of prose.join("\n").split(/\n\s*\n/)) {
      if (paragraph.trim() !== "") out.push({ text: paragraph.trim(), fence: null });
    }
    prose = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (!open) {
      prose.push(line);
      continue;
    }
    flushProse();
    const marker = open[1]!;
    const code = [line];
    let j = i + 1;
    for (; j < lines.length; j++) {
      code.push(lines[j]!);
      if (lines[j]!.trim().startsWith(marker) && lines[j]!.trim().replace(/[`~]/g, "") === "")
        break;
    }
    // An unclosed fence runs to the end of the reply; close it so it renders.
    if (j >= lines.length) code.push(marker);
    out.push({ text: code.join("\n"), fence: line.trim() });
    i = j;
  }
  flushProse();
  return out;
}

function splitCode(block: Block, limit: number): string[] {
  if (block.text.length <= limit) return [block.text];
  const fence = block.fence!;
  const close = /^(`{3,}|~{3,})/.exec(fence)![1]!;
  const body = block.text.split("\n").slice(1, -1);
  const room = limit - fence.length - close.length - 2;
  const out: string[] = [];
  let current: string[] = [];
  let size = 0;
  const flush = () => {
    if (current.length > 0) out.push(`${fence}\n${current.join("\n")}\n${close}`);
    current = [];
    size = 0;
  };
  for (const rawLine of body) {
    // A single line longer than a message is cut by characters (rare: minified output).
    for (let start = 0; start < Math.max(rawLine.length, 1); start += room) {
      const line = rawLine.slice(start, start + room);
      if (size + line.length + 1 > room) flush();
      current.push(line);
      size += line.length + 1;
    }
  }
  flush();
  return out;
}

function splitProse(paragraph: string, limit: number): string[] {
  if (paragraph.length <= limit) return [paragraph];
  const sentences = paragraph.match(/[^.!?\n]+(?:[.!?]+["')\]]*|\n|$)\s*/g) ?? [paragraph];
  const out: string[] = [];
  let current = "";
  for (const sentence of sentences) {
    for (const part of sentence.length > limit ? splitWords(sentence, limit) : [sentence]) {
      if ((current + part).trimEnd().length > limit) {
        if (current.trim() !== "") out.push(current.trim());
        current = part;
      } else current += part;
    }
  }
  if (current.trim() !== "") out.push(current.trim());
  return out;
}

function splitWords(text: string, limit: number): string[] {
  const out: string[] = [];
  let current = "";
  for (const word of text.split(/(?<=\s)/)) {
    if (word.length > limit) {
      if (current !== "") out.push(current);
      for (let i = 0; i < word.length; i += limit) out.push(word.slice(i, i + limit));
      current = "";
    } else if ((current + word).length > limit) {
      out.push(current);
      current = word;
    } else current += word;
  }
  if (current !== "") out.push(current);
  return out;
}
