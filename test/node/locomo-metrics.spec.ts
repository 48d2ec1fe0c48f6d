// The memory benchmark's LoCoMo metrics (bench/locomo.ts): turn-level recall@k as the paper counts
// it, and session-level recall@k with sessions ranked by their best turn, in its "any" and "all"
// forms; a question without evidence counts as found in every form.
import { describe, expect, it } from "vitest";
import {
  createCategoryTally,
  parseEvidence,
  rankSessions,
  recallAtK,
  sessionRecallAtK,
} from "../../bench/locomo.ts";

const sessionOf = (diaId: string) => Number(/^D(\d+):/.exec(diaId)?.[1] ?? Number.NaN);

describe("LoCoMo metrics", () => {
  it("counts the share of evidence turns in the first k, and 1 without evidence", () => {
    expect(recallAtK(["D1:1", "D2:3", "D1:2"], ["D1:2", "D3:1"], 2)).toBe(0);
    expect(recallAtK(["D1:1", "D2:3", "D1:2"], ["D1:2", "D3:1"], 3)).toBe(0.5);
    expect(recallAtK([], [], 5)).toBe(1);
  });

  it("ranks sessions by their best turn and counts any or all evidence sessions in the first k", () => {
    const ranked = rankSessions(["D4:2", "D4:3", "D1:9", "D7:1", "unknown"], (id) => {
      const session = sessionOf(id);
      return Number.isNaN(session) ? undefined : session;
    });
    expect(ranked).toEqual([4, 1, 7]);
    expect(sessionRecallAtK(ranked, [1, 9], 2, "any")).toBe(1);
    expect(sessionRecallAtK(ranked, [1, 9], 2, "all")).toBe(0);
    expect(sessionRecallAtK(ranked, [4, 1], 2, "all")).toBe(1);
    expect(sessionRecallAtK(ranked, [7], 2, "any")).toBe(0);
    expect(sessionRecallAtK(ranked, [], 1, "all")).toBe(1);
  });

  it("averages each column per category and overall, in percent", () => {
    const tally = createCategoryTally(2);
    tally.add(1, [1, 0]);
    tally.add(1, [0, 0]);
    tally.add(4, [1, 1]);
    expect(tally.rows()).toEqual([
      { category: "multi-hop", questions: 2, recall: [50, 0] },
      { category: "single-hop", questions: 1, recall: [100, 100] },
      { category: "overall", questions: 3, recall: [200 / 3, 100 / 3] },
    ]);
  });

  it("keeps every piece of a malformed evidence entry", () => {
    expect(parseEvidence(["D8:6; D9:17", "D1:3"])).toEqual(["D8:6", "D9:17", "D1:3"]);
  });
});
