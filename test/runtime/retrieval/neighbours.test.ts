// The share of a hit's score its neighbouring messages get (src/runtime/retrieval/neighbours.ts):
// the reply to a hit that asks something most of it, any other neighbour less.
import { describe, expect, it } from "vitest";
import {
  ANSWER_SHARE,
  asksSomething,
  MAX_NEIGHBOUR_SHARE,
  NEIGHBOUR_SHARE,
  neighbourShare,
} from "../../../src/runtime/retrieval/neighbours.ts";

const at = (text: string, createdAt: number) => ({ content: { text }, createdAt });

describe("neighbour shares", () => {
  it("reads a question mark anywhere in the message, in Latin, full-width or Arabic script", () => {
    expect(asksSomething("What did you adopt?")).toBe(true);
    expect(asksSomething("No way! And? Tell me everything")).toBe(true);
    expect(asksSomething("你养了什么？")).toBe(true);
    expect(asksSomething("ماذا تبنيت؟")).toBe(true);
    expect(asksSomething("We adopted a puppy!")).toBe(false);
    expect(asksSomething("")).toBe(false);
  });

  it("gives the reply to a hit that asks most of its score, and every other neighbour less", () => {
    expect(ANSWER_SHARE).toBeGreaterThan(NEIGHBOUR_SHARE);
    expect(MAX_NEIGHBOUR_SHARE).toBe(ANSWER_SHARE);
    const question = at("What did you adopt?", 2_000);
    // The reply to it.
    expect(neighbourShare(question, { createdAt: 3_000 })).toBe(ANSWER_SHARE);
    // The line before it answers nothing it asked.
    expect(neighbourShare(question, { createdAt: 1_000 })).toBe(NEIGHBOUR_SHARE);
    // Written in the same millisecond: which came first is unknown.
    expect(neighbourShare(question, { createdAt: 2_000 })).toBe(NEIGHBOUR_SHARE);
    // The reply to a statement, and the line before it.
    const statement = at("We went to the shelter on Saturday", 2_000);
    expect(neighbourShare(statement, { createdAt: 3_000 })).toBe(NEIGHBOUR_SHARE);
    expect(neighbourShare(statement, { createdAt: 1_000 })).toBe(NEIGHBOUR_SHARE);
  });
});
