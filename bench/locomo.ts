// The LoCoMo dev set (../shared/data/locomo-dev.json, CC BY-NC 4.0, evaluation only): loading its
// conversations and questions, tolerating malformed evidence ids, and the paper's retrieval
// metric: recall@k = share of a question's evidence turns in the top k (no evidence counts as 1).
import { readFileSync } from "node:fs";

export interface LocomoTurn {
  diaId: string;
  speaker: string;
  text: string;
  session: number;
  /** Session start plus the turn's index in seconds, so turns keep their order. */
  at: number;
}

export interface LocomoQuestion {
  question: string;
  evidence: string[];
  category: number;
}

export interface LocomoConversation {
  id: string;
  turns: LocomoTurn[];
  questions: LocomoQuestion[];
}

export const CATEGORY_NAMES: Record<number, string> = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };

interface RawTurn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}

export function loadLocomo(path: string): LocomoConversation[] {
  const raw = JSON.parse(readFileSync(path, "utf8")) as Array<{
    sample_id?: string;
    conversation: Record<string, unknown>;
    qa: Array<{ question: string; evidence?: unknown; category: number }>;
  }>;
  return raw.map((sample, index) => {
    const turns: LocomoTurn[] = [];
    const conversation = sample.conversation;
    const sessions = Object.keys(conversation)
      .map((key) => /^session_(\d+)$/.exec(key))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    for (const session of sessions) {
      const start = parseSessionDate(String(conversation[`session_${session}_date_time`] ?? "")) ?? Date.UTC(2023, 0, session);
      (conversation[`session_${session}`] as RawTurn[]).forEach((turn, i) => {
        const photo = turn.blip_caption ? ` [shares a photo: ${turn.blip_caption}]` : "";
        turns.push({ diaId: turn.dia_id, speaker: turn.speaker, text: `${turn.text}${photo}`, session, at: start + i * 1000 });
      });
    }
    const known = new Set(turns.map((t) => t.diaId));
    const questions = sample.qa.map((qa) => ({
      question: String(qa.question),
      evidence: parseEvidence(qa.evidence).filter((id) => known.has(id)),
      category: qa.category,
    }));
    return { id: sample.sample_id ?? `conv-${index}`, turns, questions };
  });
}

/** Evidence as the data has it: mostly ids, some "D8:6; D9:17" strings, a few junk values. */
export function parseEvidence(value: unknown): string[] {
  const items = Array.isArray(value) ? value : [value];
  return items.flatMap((item) => (typeof item === "string" ? item.split(/[;,]\s*|\s+/) : [])).map((id) => id.trim()).filter((id) => /^D\d+:\d+$/.test(id));
}

/** "1:56 pm on 8 May, 2023" -> epoch ms (UTC). */
export function parseSessionDate(text: string): number | null {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(text);
  if (!m) return null;
  const months = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
  const month = months.indexOf(m[5]!.toLowerCase());
  if (month < 0) return null;
  let hour = Number(m[1]) % 12;
  if (m[3]!.toLowerCase() === "pm") hour += 12;
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]));
}

export function recallAtK(retrieved: string[], evidence: string[], k: number): number {
  if (evidence.length === 0) return 1;
  const top = new Set(retrieved.slice(0, k));
  return evidence.filter((id) => top.has(id)).length / evidence.length;
}
