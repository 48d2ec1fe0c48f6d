// The filter before the model (src/runtime/access/message-filter.ts): what one verdict costs a
// message, with a server's rules of a realistic size (100 words, 20 RE2 patterns, a link limit and
// an account age), on chat-sized and long messages, and on an input built to make a backtracking
// matcher blow up. Beside it, JavaScript's own RegExp on the same hostile input, at lengths it can
// still finish, to show what the linear-time matcher is for. Prints markdown tables.
//
//   npm run bench:filter [-- --runs N]
import { performance } from "node:perf_hooks";
import { filterVerdict, MessageFilterRules } from "../src/runtime/access/message-filter.ts";
import { summarize } from "./stats.ts";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 2_000;

const words = Array.from({ length: 100 }, (_, i) => `spamword${i}`);
const patterns = [
  ...Array.from({ length: 19 }, (_, i) => `fr[e3]{2}\\s*n[i1]tr[o0]${i}`),
  "(a+)+$",
];
const rules = MessageFilterRules.parse({ words, patterns, maxLinks: 2, minAccountAgeDays: 7 });
const now = Date.now();
const oldAccount = now - 400 * 86_400_000;

const sentence = "Has anyone tried the new build? It crashes when I open the settings page. ";
const cases: Array<{ name: string; text: string }> = [
  { name: "chat message, 200 chars, passes", text: sentence.repeat(3).slice(0, 200) },
  { name: "long message, 2,000 chars, passes", text: sentence.repeat(27).slice(0, 2_000) },
  {
    name: "spam, declined by a word",
    text: `${sentence}spamword77 click here`,
  },
  {
    name: "hostile: 'a' x 50,000 + 'b' vs (a+)+$",
    text: `${"a".repeat(50_000)}b`,
  },
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

const f = (n: number) => n.toFixed(1);
console.log(`Filter verdicts, ${runs} runs each (µs per message)\n`);
console.log("| message | verdict | p50 µs | p95 µs | p99 µs |");
console.log("|---|---|---:|---:|---:|");
for (const { name, text } of cases) {
  const subject = { text, accountCreatedAt: oldAccount, now };
  const verdict = filterVerdict(rules, subject);
  const s = summarize(time(() => filterVerdict(rules, subject)));
  console.log(`| ${name} | ${verdict ?? "passes"} | ${f(s.p50)} | ${f(s.p95)} | ${f(s.p99)} |`);
}

console.log("\nThe hostile pattern (a+)+$ on 'a' x n + 'b', one run each (ms)\n");
console.log("| n | re2js (this filter) ms | JavaScript RegExp ms |");
console.log("|---:|---:|---:|");
const backtracking = /(a+)+$/;
const single = MessageFilterRules.parse({ patterns: ["(a+)+$"] });
for (const n of [16, 20, 22, 24, 26]) {
  const text = `${"a".repeat(n)}b`;
  const re2Start = performance.now();
  filterVerdict(single, { text, accountCreatedAt: null, now });
  const re2Ms = performance.now() - re2Start;
  const jsStart = performance.now();
  backtracking.test(text);
  const jsMs = performance.now() - jsStart;
  console.log(`| ${n} | ${re2Ms.toFixed(2)} | ${jsMs.toFixed(1)} |`);
}
