// The months a question names (src/runtime/retrieval/query-dates.ts): English month names,
// capitalised, with a year when one follows; "may" only where it can only be the month.
import { describe, expect, it } from "vitest";
import { inNamedMonth, namedMonths } from "../../../src/runtime/retrieval/query-dates.ts";

describe("named months", () => {
  it("reads a month alone, with its year, and in a full date", () => {
    expect(namedMonths("When did Anna go camping in June?")).toEqual([{ month: 5 }]);
    expect(namedMonths("What happened in October 2023?")).toEqual([{ month: 9, year: 2023 }]);
    expect(namedMonths("What did Gina find on 1 February, 2023?")).toEqual([
      { month: 1, year: 2023 },
    ]);
    expect(namedMonths("What did she show on October 13, 2023?")).toEqual([
      { month: 9, year: 2023 },
    ]);
  });

  it("does not take the verb 'may' or a lowercase word for a month", () => {
    expect(namedMonths("May I ask what Anna adopted?")).toEqual([]);
    expect(namedMonths("what may happen in march")).toEqual([]);
    expect(namedMonths("What did we plan in May?")).toEqual([{ month: 4 }]);
    expect(namedMonths("See you on 3 May")).toEqual([{ month: 4 }]);
  });

  it("matches a time in the month, any year unless the question gives one", () => {
    const june2023 = Date.UTC(2023, 5, 30, 23, 59);
    expect(inNamedMonth(june2023, [{ month: 5 }])).toBe(true);
    expect(inNamedMonth(june2023, [{ month: 5, year: 2022 }])).toBe(false);
    expect(inNamedMonth(Date.UTC(2023, 6, 1), [{ month: 5 }])).toBe(false);
  });
});
