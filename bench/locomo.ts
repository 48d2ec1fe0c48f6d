// The LoCoMo dev set (../shared/data/locomo-dev.json, CC BY-NC 4.0, evaluation only) for the memory
// benchmark: conversations as timestamped turns, questions with their evidence turns, the paper's
// retrieval metric (recall@k = share of a question's evidence turns in the top k; a question
// without evidence counts as 1) and the session-level one (a session holding evidence among the
// top k sessions, ranked by their best turn), tallied per category. Pure apart from reading the file.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { MONTHS } from "../src/runtime/retrieval/query-dates.ts";

export interface LocomoTurn {
  diaId: string;
  speaker: string;
  /** The spoken text, plus " [shares a photo: <caption>]" when the turn shares an image. */
  text: string;
  session: number;
  /** Session start plus the turn's index in seconds, so turns keep their order. */
  at: number;
}

export interface LocomoQuestion {
  question: string;
  /** Evidence dia_ids that name a turn of this conversation. */
  evidence: string[];
  /** Evidence entries that named no turn of this conversation (malformed or dangling). */
  dropped: string[];
  category: number;
}

export interface LocomoConversation {
  id: string;
  speakers: string[];
  turns: LocomoTurn[];
  questions: LocomoQuestion[];
}

export const CATEGORY_NAMES: Readonly<Record<number, string>> = {
  1: "multi-hop",
  2: "temporal",
  3: "open-domain",
  4: "single-hop",
  5: "adversarial",
};

const Turn = z.looseObject({
  speaker: z.string(),
  dia_id: z.string(),
  text: z.string(),
  blip_caption: z.string().optional(),
});
const Question = z.looseObject({ question: z.string(), evidence: z.unknown(), category: z.int() });
const Sample = z.looseObject({
  sample_id: z.string().optional(),
  conversation: z.record(z.string(), z.unknown()),
  qa: z.array(Question),
});

export function loadLocomo(path: string): LocomoConversation[] {
  const samples = z.array(Sample).parse(JSON.parse(readFileSync(path, "utf8")));
  return samples.map((sample, index) => parseConversation(sample, `conv-${index}`));
}

function parseConversation(sample: z.infer<typeof Sample>, fallbackId: string): LocomoConversation {
  const id = sample.sample_id ?? fallbackId;
  const fields = sample.conversation;
  // Some files carry date_time keys for sessions that have no turns: the turns decide.
  const sessions = Object.keys(fields)
    .map((key) => /^session_(\d+)$/.exec(key)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  const turns: LocomoTurn[] = [];
  for (const session of sessions) {
    const date = fields[`session_${session}_date_time`];
    const start = typeof date === "string" ? parseSessionDate(date) : null;
    if (start === null)
      throw new Error(`${id}: session ${session} has no readable date (${JSON.stringify(date)})`);
    z.array(Turn)
      .parse(fields[`session_${session}`])
      .forEach((turn, i) => {
        const photo = turn.blip_caption ? ` [shares a photo: ${turn.blip_caption}]` : "";
        turns.push({
          diaId: turn.dia_id,
          speaker: turn.speaker,
          text: `${turn.text}${photo}`,
          session,
          at: start + i * 1000,
        });
      });
  }
  const known = new Set(turns.map((turn) => turn.diaId));
  const questions = sample.qa.map((qa) => {
    const cited = parseEvidence(qa.evidence);
    return {
      question: qa.question,
      evidence: cited.filter((e) => known.has(e)),
      dropped: cited.filter((e) => !known.has(e)),
      category: qa.category,
    };
  });
  const speakers = [fields.speaker_a, fields.speaker_b].filter(
    (s): s is string => typeof s === "string",
  );
  return { id, speakers, turns, questions };
}

/**
 * Evidence as the data has it: a list of dia_ids, where a few entries hold several ids
 * ("D8:6; D9:17") or junk ("D", "D:11:26"). Splits on ';', ',' and spaces and keeps every
 * piece; the loader then drops pieces that name no turn (the data README's rule).
 */
export function parseEvidence(value: unknown): string[] {
  const entries = Array.isArray(value) ? value : [value];
  return [
    ...new Set(
      entries
        .flatMap((entry) => (typeof entry === "string" ? entry.split(/[;,\s]+/) : []))
        .filter((piece) => piece !== ""),
    ),
  ];
}

/** "1:56 pm on 8 May, 2023" -> epoch ms, read as UTC (the data has no time zone). */
export function parseSessionDate(text: string): number | null {
  const m = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$/i.exec(
    text,
  );
  if (!m) return null;
  const [, hours = "", minutes = "", half = "", day = "", monthName = "", year = ""] = m;
  const month = MONTHS.indexOf(monthName.toLowerCase());
  const hour = Number(hours);
  if (month < 0 || hour < 1 || hour > 12 || Number(minutes) > 59) return null;
  return Date.UTC(
    Number(year),
    month,
    Number(day),
    (hour % 12) + (half.toLowerCase() === "pm" ? 12 : 0),
    Number(minutes),
  );
}

/** Share of the evidence found among the first k retrieved ids (Maharana et al. 2024, §5). */
export function recallAtK(
  retrieved: readonly string[],
  evidence: readonly string[],
  k: number,
): number {
  if (evidence.length === 0) return 1;
  const top = new Set(retrieved.slice(0, k));
  return evidence.filter((id) => top.has(id)).length / evidence.length;
}

export interface RecallRow {
  category: string;
  questions: number;
  /** Mean of each column over the category's questions, in percent. */
  recall: number[];
}

/** Per-question values (each 0..1) averaged per category, in percent. */
export interface CategoryTally {
  add(category: number, values: readonly number[]): void;
  /** One row per category seen (in category order), then "overall". */
  rows(): RecallRow[];
}

export function createCategoryTally(width: number): CategoryTally {
  const sums = new Map<number, { n: number; sums: number[] }>();
  const row = (category: string, entries: { n: number; sums: number[] }[]): RecallRow => {
    const n = entries.reduce((a, e) => a + e.n, 0);
    return {
      category,
      questions: n,
      recall: Array.from({ length: width }, (_, i) =>
        n === 0 ? NaN : (100 * entries.reduce((a, e) => a + e.sums[i]!, 0)) / n,
      ),
    };
  };
  return {
    add(category, values) {
      const entry = sums.get(category) ?? { n: 0, sums: Array.from({ length: width }, () => 0) };
      entry.n++;
      for (let i = 0; i < width; i++) entry.sums[i]! += values[i] ?? 0;
      sums.set(category, entry);
    },
    rows() {
      const categories = [...sums.keys()].sort((a, b) => a - b);
      return [
        ...categories.map((c) => row(CATEGORY_NAMES[c] ?? `category ${c}`, [sums.get(c)!])),
        row("overall", [...sums.values()]),
      ];
    },
  };
}

export interface RecallTally {
  add(category: number, retrieved: readonly string[], evidence: readonly string[]): void;
  /** One row per category seen (in category order), then "overall". */
  rows(): RecallRow[];
}

/** Turn-level recall@k per category. */
export function createRecallTally(ks: readonly number[]): RecallTally {
  const tally = createCategoryTally(ks.length);
  return {
    add: (category, retrieved, evidence) =>
      tally.add(
        category,
        ks.map((k) => recallAtK(retrieved, evidence, k)),
      ),
    rows: () => tally.rows(),
  };
}

/**
 * Sessions in the order of their best turn in a turn ranking (each session where its first turn
 * is). `sessionOf` names a retrieved turn's session, or undefined for one it does not know.
 */
export function rankSessions(
  retrieved: readonly string[],
  sessionOf: (diaId: string) => number | undefined,
): number[] {
  const sessions: number[] = [];
  for (const id of retrieved) {
    const session = sessionOf(id);
    if (session !== undefined && !sessions.includes(session)) sessions.push(session);
  }
  return sessions;
}

/**
 * Session-level recall@k of one question: 1 when any session holding its evidence is among the
 * first k sessions ("any"), or only when every such session is ("all"); 1 without evidence.
 */
export function sessionRecallAtK(
  ranked: readonly number[],
  evidenceSessions: readonly number[],
  k: number,
  mode: "any" | "all",
): number {
  if (evidenceSessions.length === 0) return 1;
  const top = new Set(ranked.slice(0, k));
  const found = (s: number) => top.has(s);
  return (mode === "any" ? evidenceSessions.some(found) : evidenceSessions.every(found)) ? 1 : 0;
}
