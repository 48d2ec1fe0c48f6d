// Hybrid ranking: fuses the full-text and the vector result lists with weighted reciprocal-rank
// fusion (Cormack et al. 2009; k = 60), which needs no calibration between BM25 and cosine scores.
// The fused score is scaled to 0..1 (1 = first in both lists). Near-duplicate texts are collapsed
// so a repeated message does not take several of the few slots a prompt has.

export interface TextHit {
  id: string;
}

export interface VectorHit {
  id: string;
  /** Cosine similarity. */
  score: number;
}

export interface FusedHit {
  id: string;
  score: number;
  /** Cosine similarity when the vector leg found it, else null. */
  similarity: number | null;
  matchedBy: Array<"text" | "vector">;
}

export interface FusionOptions {
  /** Weight of each list; equal by default. */
  textWeight?: number;
  vectorWeight?: number;
  /** RRF's smoothing constant. */
  k?: number;
}

export const RRF_K = 60;

/** Both lists best first. Returns every id found by either, best first. */
export function fuseRankings(
  text: TextHit[],
  vector: VectorHit[],
  options: FusionOptions = {},
): FusedHit[] {
  const k = options.k ?? RRF_K;
  const textWeight = options.textWeight ?? 1;
  const vectorWeight = options.vectorWeight ?? 1;
  const best = (textWeight + vectorWeight) / (k + 1);
  const hits = new Map<string, FusedHit>();
  const entry = (id: string): FusedHit => {
    let hit = hits.get(id);
    if (!hit) {
      hit = { id, score: 0, similarity: null, matchedBy: [] };
      hits.set(id, hit);
    }
    return hit;
  };
  text.forEach((hit, rank) => {
    const fused = entry(hit.id);
    if (fused.matchedBy.includes("text")) return;
    fused.score += textWeight / (k + rank + 1);
    fused.matchedBy.push("text");
  });
  vector.forEach((hit, rank) => {
    const fused = entry(hit.id);
    if (fused.matchedBy.includes("vector")) return;
    fused.score += vectorWeight / (k + rank + 1);
    fused.similarity = hit.score;
    fused.matchedBy.push("vector");
  });
  return [...hits.values()]
    .map((hit) => ({ ...hit, score: hit.score / best }))
    .sort((a, b) => b.score - a.score || (b.similarity ?? -2) - (a.similarity ?? -2));
}

/** Lowercased, whitespace-collapsed, punctuation-trimmed: "Hi!  there" and "hi there" are one text. */
export function normalizeForDedup(text: string): string {
  return text
    .toLowerCase()
    .normalize("NFKC")
    .replace(/[\s\p{P}]+/gu, " ")
    .trim();
}

/** Keeps the first (best) of each group of items whose normalized text is the same. */
export function dedupeByText<T>(items: T[], textOf: (item: T) => string): T[] {
  const seen = new Set<string>();
  const kept: T[] = [];
  for (const item of items) {
    const key = normalizeForDedup(textOf(item));
    if (key && seen.has(key)) continue;
    seen.add(key);
    kept.push(item);
  }
  return kept;
}
