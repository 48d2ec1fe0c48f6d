// A deterministic embedder that needs no service: hashed word and character n-gram features
// (signed feature hashing, sublinear term frequency, L2-normalized). It is the default for local
// runs and tests. Fused with the FTS5 leg, it adds what BM25 lacks: near-matches through
// character n-grams ("synthesiser" ~ "synthesizers") and word pairs for phrases.
import type { Embedder } from "./types.ts";
import { contentWords } from "./query-terms.ts";

export const DEFAULT_LOCAL_DIMENSIONS = 384;
const BIGRAM_WEIGHT = 0.5;
/** Each word's character n-grams together weigh this much relative to the word itself. */
const NGRAM_WEIGHT = 0.8;

export function createHashEmbedder(options: { dimensions?: number } = {}): Embedder {
  const dimensions = options.dimensions ?? DEFAULT_LOCAL_DIMENSIONS;
  if (!Number.isInteger(dimensions) || dimensions < 8) throw new RangeError("dimensions must be an integer >= 8");
  return {
    id: "local:hash-v1",
    kind: "local",
    dimensions,
    maxBatch: 1_000,
    async embed(texts) {
      return texts.map((text) => embedText(text, dimensions));
    },
  };
}

export function embedText(text: string, dimensions: number): Float32Array {
  const counts = new Map<string, number>();
  const add = (feature: string, weight: number) => counts.set(feature, (counts.get(feature) ?? 0) + weight);
  const raw = contentWords(text);
  const words = raw.map(stem);
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    add(`w:${word}`, 1);
    if (i + 1 < words.length) add(`b:${word} ${words[i + 1]}`, BIGRAM_WEIGHT);
    const grams = charNgrams(`<${raw[i]}>`);
    for (const gram of grams) add(`c:${gram}`, NGRAM_WEIGHT / grams.length);
  }
  const vector = new Float32Array(dimensions);
  for (const [feature, count] of counts) {
    const hash = fnv1a(feature);
    const sign = (hash & 0x80000000) === 0 ? 1 : -1;
    // Sublinear term frequency: a word said five times is not five times as telling.
    vector[(hash & 0x7fffffff) % dimensions]! += sign * (1 + Math.log(1 + count));
  }
  let norm = 0;
  for (const value of vector) norm += value * value;
  if (norm === 0) {
    // Nothing to hash (empty or only stopwords): a stable unit vector for the raw text.
    vector[fnv1a(`raw:${text.toLowerCase()}`) % dimensions] = 1;
    return vector;
  }
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < dimensions; i++) vector[i]! *= scale;
  return vector;
}

/** Character 3- to 5-grams of a word (with its boundary markers). */
function charNgrams(word: string): string[] {
  const grams: string[] = [];
  for (let n = 3; n <= 5; n++) {
    for (let i = 0; i + n <= word.length; i++) grams.push(word.slice(i, i + n));
  }
  return grams.length > 0 ? grams : [word];
}

/** A light English suffix stripper: enough to join "running"/"runs"/"run" and "puppies"/"puppy". */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  const rules: Array<[RegExp, string]> = [
    [/ies$/, "y"],
    [/sses$/, "ss"],
    [/([^s])s$/, "$1"],
    [/eed$/, "ee"],
    [/(..)ing$/, "$1"],
    [/(..)ed$/, "$1"],
    [/(..)ly$/, "$1"],
  ];
  let out = word;
  for (const [pattern, replacement] of rules) {
    if (pattern.test(out)) {
      out = out.replace(pattern, replacement);
      break;
    }
  }
  // "running" -> "runn" -> "run"
  if (/([b-df-hj-np-tv-z])\1$/.test(out) && !/(ll|ss|zz)$/.test(out)) out = out.slice(0, -1);
  return out;
}

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
