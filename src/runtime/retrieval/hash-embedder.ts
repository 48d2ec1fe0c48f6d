// An embedder that needs no service: deterministic, offline and fast, the default for local runs and
// tests. Retrieval fuses it with FTS5/BM25, so it is built to add what BM25 lacks: stemmed words
// and character n-grams join inflections and near-spellings ("puppies" ~ "puppy", "synthesiser" ~
// "synthesizers"), word pairs reward phrases. Signed feature hashing, sublinear weights, unit length.
import { isStopword } from "./query-terms.ts";
import type { Embedder } from "../ports/vectors.ts";

export const DEFAULT_HASH_DIMENSIONS = 384;
export const HASH_EMBEDDER_ID = "local:hash-v1";
const HASH_MAX_BATCH = 1_000;

/** A content word's own feature. */
const UNIGRAM_WEIGHT = 1;
/** Two adjacent content words. */
const BIGRAM_WEIGHT = 0.5;
/** A word's first five letters: a cheap second stemmer ("adoption" ~ "adopted", "educational" ~ "education"). */
const PREFIX_WEIGHT = 0.5;
const PREFIX_CHARS = 5;
/** All character n-grams of one word together; each gets an equal share. */
const CHAR_NGRAMS_WEIGHT = 1;
const MIN_NGRAM = 3;
const MAX_NGRAM = 5;
/**
 * Short words are common words (Zipf's law of abbreviation), and with no corpus statistics word
 * length is the best rarity hint we have: a word weighs (letters - 1) / 8, at least 0.3, at most 1.
 */
const RARITY_LETTERS = 8;
const MIN_RARITY = 0.3;

export interface HashEmbedderOptions {
  /** Vector length; 384 by default. */
  dimensions?: number;
}

export function createHashEmbedder(options: HashEmbedderOptions = {}): Embedder {
  const dimensions = options.dimensions ?? DEFAULT_HASH_DIMENSIONS;
  if (!Number.isInteger(dimensions) || dimensions < 1) {
    throw new RangeError("hash embedder dimensions must be a positive whole number");
  }
  return {
    id: HASH_EMBEDDER_ID,
    kind: "local",
    dimensions,
    maxBatch: HASH_MAX_BATCH,
    async embed(texts) {
      return texts.map((text) => hashEmbed(text, dimensions));
    },
  };
}

/** One text's unit vector. Never NaN: a text with no content words still gets a stable direction. */
export function hashEmbed(text: string, dimensions: number): Float32Array {
  const features = new Map<string, number>();
  const add = (feature: string, weight: number): void => {
    features.set(feature, (features.get(feature) ?? 0) + weight);
  };
  const words = wordTokens(text);
  let content = words.filter((word) => !isStopword(word) && word.length > 1);
  // Only function words ("who did it?"): they are all there is to go on.
  if (content.length === 0) content = words;
  const stems = content.map(stem);
  for (let i = 0; i < content.length; i++) {
    const word = content[i]!;
    const rarity = wordRarity(word);
    add(`w:${stems[i]}`, UNIGRAM_WEIGHT * rarity);
    if (i + 1 < content.length) add(`b:${stems[i]}_${stems[i + 1]}`, BIGRAM_WEIGHT * rarity);
    add(`p:${word.slice(0, PREFIX_CHARS)}`, PREFIX_WEIGHT * rarity);
    const grams = charNgrams(word);
    for (const gram of grams) add(`c:${gram}`, (CHAR_NGRAMS_WEIGHT * rarity) / grams.length);
  }
  const vector = new Float32Array(dimensions);
  for (const [feature, weight] of features) {
    const hash = murmur3(feature, 0x5bd1e995);
    // The sign comes from a second, independent hash, so collisions cancel out on average.
    const sign = murmur3(feature, 0x27d4eb2f) & 1 ? 1 : -1;
    vector[hash % dimensions]! += sign * sublinear(weight);
  }
  if (!normalizeInPlace(vector)) {
    // No word at all (empty, punctuation, emoji): one bucket picked by the raw text.
    vector[murmur3(`raw:${text.trim().toLowerCase()}`, 0x5bd1e995) % dimensions] = 1;
  }
  return vector;
}

/** Cosine similarity; 0 when either vector is zero or the lengths differ. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    normA += x * x;
    normB += y * y;
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB);
}

/** Lowercased words of letters and digits, diacritics stripped ("Café" -> "cafe"), clitics dropped. */
export function wordTokens(text: string): string[] {
  const folded = text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase();
  const words = folded.match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)*/gu) ?? [];
  // "anna's" -> "anna", "I'll" -> "i" (not "ill"), "we've" -> "we"; "don't" -> "dont", a stopword.
  return words.map((word) => word.replace(/['’](?:s|ll|d|re|ve|m)$/, "").replace(/['’]/g, ""));
}

/**
 * A light English suffix stripper (far lighter than Porter's): enough to join "adopted"/"adopt",
 * "puppies"/"puppy", "running"/"runs"/"run", "hiking"/"hike". Numbers and short words pass as is.
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  let out = word;
  let verbal = false;
  if (out.endsWith("ies") || out.endsWith("ied")) out = `${out.slice(0, -3)}y`;
  else if (/(ss|us|is)$/.test(out)) {
    // "glass", "bus", "tennis": not plurals.
  } else if (/(ches|shes|sses|xes|zes)$/.test(out)) out = out.slice(0, -2);
  else if (out.endsWith("s")) out = out.slice(0, -1);
  else if (out.endsWith("ing") && out.length > 5) [out, verbal] = [out.slice(0, -3), true];
  else if (out.endsWith("eed") && out.length > 4) out = out.slice(0, -1);
  else if (out.endsWith("ed") && out.length > 4) [out, verbal] = [out.slice(0, -2), true];
  else if (out.endsWith("ly") && out.length > 5) out = out.slice(0, -2);
  // "running" -> "runn" -> "run", "stopped" -> "stop"; "dressed" keeps its "ss".
  if (verbal && /([b-df-hj-km-rtvz])\1$/.test(out)) out = out.slice(0, -1);
  // A final silent e goes, so "love", "loves", "loved", "loving" meet at "lov" (as in Porter).
  if (out.length > 3 && out.endsWith("e")) out = out.slice(0, -1);
  return out;
}

/** Numbers count in full ("2022", "4"); words by their length. */
function wordRarity(word: string): number {
  if (/^\p{N}+$/u.test(word)) return 1;
  return Math.min(1, Math.max(MIN_RARITY, (word.length - 1) / RARITY_LETTERS));
}

/** The character 3- to 5-grams of a word between boundary markers; a short word is one gram. */
function charNgrams(word: string): string[] {
  const marked = `<${word}>`;
  if (marked.length <= MIN_NGRAM) return [marked];
  const grams: string[] = [];
  for (let n = MIN_NGRAM; n <= MAX_NGRAM; n++) {
    for (let i = 0; i + n <= marked.length; i++) grams.push(marked.slice(i, i + n));
  }
  return grams;
}

/** 1 + ln(w) above 1 (a word said five times is not five times as telling); linear below. */
function sublinear(weight: number): number {
  return weight > 1 ? 1 + Math.log(weight) : weight;
}

/** Scales to unit length; false when the vector is all zeros. */
function normalizeInPlace(vector: Float32Array): boolean {
  let norm = 0;
  for (const value of vector) norm += value * value;
  if (norm === 0 || !Number.isFinite(norm)) return false;
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < vector.length; i++) vector[i]! *= scale;
  return true;
}

/**
 * A copy scaled to unit length (so a dot product is the cosine), or null for a zero or non-finite
 * vector, which has no direction. Service embedders use it on what their API returns.
 */
export function unitVector(values: ArrayLike<number>): Float32Array | null {
  const vector = Float32Array.from(values);
  return normalizeInPlace(vector) ? vector : null;
}

/** MurmurHash3 (x86, 32-bit) over the UTF-16 code units of a string; unsigned. */
function murmur3(text: string, seed: number): number {
  let h = seed >>> 0;
  const length = text.length;
  let i = 0;
  // Two UTF-16 units per 32-bit block.
  for (; i + 1 < length; i += 2) {
    let k = (text.charCodeAt(i) & 0xffff) | ((text.charCodeAt(i + 1) & 0xffff) << 16);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  if (i < length) {
    let k = text.charCodeAt(i) & 0xffff;
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
  }
  h ^= length * 2;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
