// The filter before the model (src/runtime/access/message-filter.ts): what one verdict costs a
// message. Realistic: the rules of the docs' filter sections (docs/discord.md, telegram.md) on
// chat-sized and long messages. Hostile: the worst rule sets the limits allow (patterns filling
// the cost bound of filter-cost.ts with wide Unicode classes, 500 words that share their start)
// on 4,000-character messages built against them, each timed cold (compiled and first matched in
// the timed call, as after a config change). Beside them, what the bound refuses, matched as the
// filter did before it. Prints markdown tables.
//
//   npm run bench:filter [-- --runs N]
import { performance } from "node:perf_hooks";
import { RE2JS } from "re2js";
import { MAX_PATTERN_INSTRUCTIONS } from "../src/runtime/access/filter-cost.ts";
import { filterVerdict, MessageFilterRules } from "../src/runtime/access/message-filter.ts";
import { summarize } from "./stats.ts";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 2_000;
const coldRuns = Math.max(5, Math.min(15, Math.round(runs / 100)));
const now = Date.now();
const oldAccount = now - 400 * 86_400_000;
const f = (n: number) => n.toFixed(1);

// ---- realistic: the docs' examples ----------------------------------------------------------
const docs = MessageFilterRules.parse({
  words: ["casino", "free nitro"],
  patterns: ["b[i1]tc[o0]in\\s+giveaway", "^(?:\\w+\\s+){0,2}@everyone", "fr[e3]{2}\\s*nitro"],
  maxLinks: 2,
  minAccountAgeDays: 7,
});
const sentence = "Has anyone tried the new build? It crashes when I open the settings page. ";
const realistic: Array<{ name: string; text: string }> = [
  { name: "chat message, 200 chars, passes", text: sentence.repeat(3).slice(0, 200) },
  { name: "long message, 4,000 chars, passes", text: sentence.repeat(55).slice(0, 4_000) },
  { name: "spam, declined by a word", text: `${sentence}the best CASINO in town` },
  { name: "spam, declined by a pattern", text: `${sentence}BITC0IN   giveaway today` },
];

function time(fn: () => unknown): number[] {
  for (let i = 0; i < 50; i++) fn();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    fn();
    samples.push((performance.now() - start) * 1000);
  }
  return samples;
}

console.log(`Realistic: the docs' rules, ${runs} runs each (µs per message)\n`);
console.log("| message | verdict | p50 µs | p95 µs | p99 µs |");
console.log("|---|---|---:|---:|---:|");
for (const { name, text } of realistic) {
  const subject = { text, accountCreatedAt: oldAccount, now };
  const verdict = filterVerdict(docs, subject);
  const s = summarize(time(() => filterVerdict(docs, subject)));
  console.log(`| ${name} | ${verdict ?? "passes"} | ${f(s.p50)} | ${f(s.p95)} | ${f(s.p99)} |`);
}

// ---- hostile: the worst the limits allow -----------------------------------------------------
/** `count` patterns filling the bound with a wide class repeated; distinct starts, so RE2 cannot
 * merge them into one. `{k}x` compiles to k + 3 instructions. */
function widePatterns(count: number): string[] {
  const each = Math.floor(MAX_PATTERN_INSTRUCTIONS / count);
  return Array.from({ length: count }, (_, i) =>
    count === 1
      ? `[\\p{L}\\p{N}]{${each - 3}}x`
      : `${String.fromCharCode(0x4e00 + i)}?[\\p{L}\\p{N}]{${each - 5}}x`,
  );
}
/** 500 words: 250 phrases of 49 words that share their first 48, and 250 symbols of 100 `!`. */
const hostileWords = [
  ...Array.from({ length: 250 }, (_, i) => `${"a ".repeat(48)}b${i}`.slice(0, 100)),
  ...Array.from({ length: 250 }, (_, i) => `${"!".repeat(99)}${String.fromCodePoint(0x2200 + i)}`),
];
/** One code point at the start of each run of letters and digits: every one a new DFA class. */
const rangeStarts = (() => {
  const letterOrDigit = (cp: number) => /[\p{L}\p{N}]/u.test(String.fromCodePoint(cp));
  const starts: string[] = [];
  for (let cp = 0x30; cp < 0x32000; cp++)
    if (letterOrDigit(cp) && !letterOrDigit(cp - 1) && cp !== 0x58 && cp !== 0x78)
      starts.push(String.fromCodePoint(cp));
  return Array.from({ length: 4_000 }, (_, i) => starts[(i * 7919) % starts.length]).join("");
})();
const hostileMessages: Array<{ name: string; text: string }> = [
  { name: "4,000 letters, each from another Unicode range", text: rangeStarts },
  {
    name: "4,000 ASCII letters and digits",
    text: "abcdefghijklmnopqrstuvwyz0123456789".repeat(115).slice(0, 4_000),
  },
  { name: "`a ` x 2,000 (the phrases' shared start)", text: "a ".repeat(2_000) },
  { name: "`!` x 4,000 (the symbols' shared start)", text: "!".repeat(4_000) },
];

let fresh = 0;
/**
 * One verdict on rules never seen before: the milliseconds to compile them (the first message
 * after a config change pays it, once per isolate), then to check the message with the RE2
 * program's cache empty, the most a message can cost.
 */
function cold(input: { words: string[]; patterns: string[] }, text: string) {
  // A word of its own makes a rule set the filter has not compiled yet.
  const rules = MessageFilterRules.parse({
    ...input,
    words: [...input.words.slice(1), `fresh${fresh++}`],
  });
  const compiled = performance.now();
  filterVerdict(rules, { text: "", accountCreatedAt: null, now });
  const start = performance.now();
  filterVerdict(rules, { text, accountCreatedAt: null, now });
  return { compileMs: start - compiled, ms: performance.now() - start };
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(
  `\nHostile: the worst rule sets the limits allow (${MAX_PATTERN_INSTRUCTIONS} RE2 instructions of patterns, 500 words), cold, ${coldRuns} runs each (ms per message)\n`,
);
console.log("| patterns | message | median ms | max ms | compile ms (median) |");
console.log("|---|---|---:|---:|---:|");
let worst = 0;
for (const count of [1, 5, 20]) {
  const input = { words: hostileWords, patterns: widePatterns(count) };
  for (const { name, text } of hostileMessages) {
    cold(input, text);
    const samples = Array.from({ length: coldRuns }, () => cold(input, text));
    const ms = samples.map((sample) => sample.ms);
    worst = Math.max(worst, median(ms));
    const compile = median(samples.map((sample) => sample.compileMs));
    const label = `${count} x \`${input.patterns[count - 1]}\``;
    console.log(
      `| ${label} | ${name} | ${f(median(ms))} | ${f(Math.max(...ms))} | ${f(compile)} |`,
    );
  }
}
console.log(`\nWorst median: ${f(worst)} ms (target: under 50 ms on 4,000 characters).`);

// ---- what the bound refuses ------------------------------------------------------------------
const refused = MessageFilterRules.safeParse({ patterns: Array(100).fill("[\\p{L}\\p{N}]{900}x") });
console.log(`\nRefused now: 100 x \`[\\p{L}\\p{N}]{900}x\` (each within the old limits):`);
console.log(`> filter.patterns.0: ${refused.error?.issues[0]?.message}`);
console.log("\nMatched as before the bound (one RE2 program, cold), one run each (ms)\n");
console.log("| patterns | message | ms |");
console.log("|---|---|---:|");
for (const count of [1, 4]) {
  const patterns = Array.from(
    { length: count },
    (_, i) => `${String.fromCharCode(0x4e00 + i)}?[\\p{L}\\p{N}]{900}x`,
  );
  for (const { name, text } of hostileMessages.slice(0, 2)) {
    const program = RE2JS.compile(
      patterns.map((p) => `(?:${p})`).join("|"),
      RE2JS.CASE_INSENSITIVE,
    );
    const start = performance.now();
    program.test(text);
    console.log(
      `| ${count} x \`[\\p{L}\\p{N}]{900}x\` | ${name} | ${f(performance.now() - start)} |`,
    );
  }
}
