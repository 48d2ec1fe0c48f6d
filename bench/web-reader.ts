// The web reader's two candidates, measured where they would run: each is bundled by wrangler
// (the bytes it adds to the worker) and run in local workerd on generated news pages of three
// sizes (CPU per page: wall time of N conversions in one request, minus an empty request, over
// N). `dom` is linkedom + Readability + node-html-markdown (src/plugins/web/), `rewriter` is
// HTMLRewriter alone (bench/web-reader/rewriter-markdown.ts). Also reports how much of the
// article and of the page chrome each keeps. Then read_url's whole path (measure the page, refuse
// it or read it) on the pages of bench/web-reader/bounds-pages.ts: the audit's worst pages, the
// costliest shapes within the limits and big real ones, with workerd's own CPU time per page
// (from /proc, Linux only) beside the wall time. Run: `npm run bench:web`.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { pageToMarkdown } from "../src/plugins/web/page-to-markdown.ts";
import { measurePage } from "../src/plugins/web/page-shape.ts";
import {
  ARTICLE_MARKERS,
  articlePage,
  CHROME_MARKERS,
  PAGE_SHAPES,
} from "../test/peers/web-pages.ts";
import { summarize } from "./stats.ts";
import { BOUNDS_PAGES } from "./web-reader/bounds-pages.ts";

const ROUNDS = 15;
const BOUNDS_ROUNDS = 5;
/** Repeats per request for a page, so each measured request takes about this long. */
const BOUNDS_REQUEST_MS = 400;
const PER_REQUEST = { small: 10, medium: 4, large: 1 } as const;
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin",
  "wrangler.js",
);

/** Bundles `entry` as wrangler deploy would; returns the module's path. */
function bundle(name: string, entry: string): string {
  const dir = resolve(".wrangler", "bench-web", name);
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "wrangler.toml");
  writeFileSync(
    config,
    `name = "bench-web-${name}"\nmain = "${resolve(entry)}"\ncompatibility_date = "2026-11-01"\ncompatibility_flags = ["nodejs_compat"]\n`,
  );
  execFileSync(
    process.execPath,
    [wrangler, "deploy", "--dry-run", "--outdir", join(dir, "out"), "--config", config],
    {
      stdio: "pipe",
    },
  );
  // The module is named after the entry.
  const module = readdirSync(join(dir, "out")).find((file) => file.endsWith(".js"));
  if (!module) throw new Error(`wrangler wrote no module for ${entry}`);
  return join(dir, "out", module);
}

function startWorker(scriptPath: string): Miniflare {
  return new Miniflare(
    convertV4MiniflareOptions({
      workers: [
        {
          name: "bench-web",
          modules: true,
          scriptPath,
          compatibilityDate: "2026-11-01",
          compatibilityFlags: ["nodejs_compat"],
        },
      ],
    }),
  );
}

function sizeOf(path: string): { bytes: number; gzip: number } {
  return { bytes: statSync(path).size, gzip: gzipSync(readFileSync(path)).length };
}

/** `-- --bounds`: only read_url's bounds, not the readers' comparison. */
const BOUNDS_ONLY = process.argv.includes("--bounds");

/** Wall time of one request to the bench worker, in ms. */
function timer(base: URL): (path: string) => Promise<number> {
  return async (path) => {
    const started = performance.now();
    await (await fetch(new URL(path, base))).text();
    return performance.now() - started;
  };
}

async function main(): Promise<void> {
  if (BOUNDS_ONLY) {
    const mf = startWorker(bundle("both", "bench/web-reader/worker.ts"));
    const url = await mf.ready;
    const bounds = await boundsRows(url, timer(url));
    await mf.dispose();
    printBounds(bounds);
    return;
  }
  mkdirSync(resolve(".wrangler", "bench-web", "entries"), { recursive: true });
  const empty = resolve(".wrangler", "bench-web", "entries", "empty.ts");
  writeFileSync(empty, "export default { fetch: () => new Response('ok') };\n");
  const dom = resolve(".wrangler", "bench-web", "entries", "dom.ts");
  writeFileSync(
    dom,
    `import { pageToMarkdown } from "${resolve("src/plugins/web/page-to-markdown.ts")}";\nexport default { fetch: async (r: Request) => new Response(pageToMarkdown(await r.text(), r.url).markdown) };\n`,
  );
  const rewriter = resolve(".wrangler", "bench-web", "entries", "rewriter.ts");
  writeFileSync(
    rewriter,
    `import { rewriterMarkdown } from "${resolve("bench/web-reader/rewriter-markdown.ts")}";\nexport default { fetch: async (r: Request) => new Response(await rewriterMarkdown(await r.text(), r.url)) };\n`,
  );
  const base = sizeOf(bundle("empty", empty));
  const sizes = {
    dom: sizeOf(bundle("dom", dom)),
    rewriter: sizeOf(bundle("rewriter", rewriter)),
  };
  const script = bundle("both", "bench/web-reader/worker.ts");
  const mf = startWorker(script);
  const url = await mf.ready;
  const time = timer(url);
  const rows: string[] = [];
  for (const page of Object.keys(PAGE_SHAPES) as Array<keyof typeof PAGE_SHAPES>) {
    const html = articlePage(PAGE_SHAPES[page]);
    const n = PER_REQUEST[page];
    for (const kind of ["dom", "rewriter"] as const) {
      await time(`/${kind}?page=${page}&n=1`); // warm-up (JIT, page generation)
      const samples: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const noop = await time("/noop");
        samples.push(((await time(`/${kind}?page=${page}&n=${n}`)) - noop) / n);
      }
      const s = summarize(samples);
      rows.push(
        `| ${page} (${Math.round(html.length / 1024)} kB) | ${kind} | ${s.p50.toFixed(1)} | ${s.p95.toFixed(1)} |`,
      );
    }
  }
  const bounds = await boundsRows(url, time);
  await mf.dispose();

  const kept = await keptMarkers();
  const kb = (n: number) => `${(n / 1024).toFixed(0)} kB`;
  console.log("\nBundle (wrangler deploy --dry-run, unminified ESM), added to an empty worker:\n");
  console.log("| reader | bytes added | gzip added |\n|---|---:|---:|");
  for (const [kind, size] of Object.entries(sizes))
    console.log(`| ${kind} | ${kb(size.bytes - base.bytes)} | ${kb(size.gzip - base.gzip)} |`);
  console.log(`\nCPU per page in local workerd, ms (${ROUNDS} rounds):\n`);
  console.log("| page | reader | p50 | p95 |\n|---|---|---:|---:|");
  for (const row of rows) console.log(row);
  console.log("\nWhat each keeps of the medium page:\n");
  console.log(
    "| reader | article markers kept (of 4) | chrome markers kept (of 6) | markdown chars |\n|---|---:|---:|---:|",
  );
  for (const row of kept) console.log(row);
  printBounds(bounds);
}

function printBounds(bounds: string[]): void {
  console.log(
    `\nread_url's whole path in local workerd (measure, then refuse or read), medians of ${BOUNDS_ROUNDS} rounds:\n`,
  );
  console.log(
    "| page | size | elements | depth | read_url | CPU ms | wall ms |\n|---|---:|---:|---:|---|---:|---:|",
  );
  for (const row of bounds) console.log(row);
}

/** CPU time the workerd processes this bench started have used, in ms (10 ms ticks). */
function workerdCpuMs(): number {
  let ticks = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // gone since the listing
    }
    // Fields after "(comm) ": state, ppid, ..., utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (!stat.includes("(workerd)") || Number(fields[1]) !== process.pid) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks * 10;
}

async function boundsRows(base: URL, time: (path: string) => Promise<number>): Promise<string[]> {
  const rows: string[] = [];
  for (const [name, make] of Object.entries(BOUNDS_PAGES)) {
    const html = make();
    const shape = measurePage(html);
    const path = (n: number) => `/read?page=${encodeURIComponent(name)}&n=${n}`;
    const first = await time(path(1)); // warm-up, and how many fit in a request
    const n = Math.max(1, Math.min(200, Math.ceil(BOUNDS_REQUEST_MS / Math.max(first, 1))));
    const cpu: number[] = [];
    const wall: number[] = [];
    for (let i = 0; i < BOUNDS_ROUNDS; i++) {
      const noop = await time("/noop");
      const before = workerdCpuMs();
      const took = await time(path(n));
      cpu.push((workerdCpuMs() - before) / n);
      wall.push(Math.max(0, took - noop) / n);
    }
    const verdict = (await (await fetch(new URL(path(1), base))).json()) as { ok: boolean };
    const size = `${Math.round(html.length / 1024).toLocaleString("en-US")} kB`;
    rows.push(
      `| ${name} | ${size} | ${shape.elements.toLocaleString("en-US")} | ${shape.depth.toLocaleString("en-US")} | ${verdict.ok ? "read" : "refused"} | ${median(cpu).toFixed(1)} | ${median(wall).toFixed(1)} |`,
    );
  }
  return rows;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** The rewriter runs only in workerd; its output for the check comes from the bench worker. */
async function keptMarkers(): Promise<string[]> {
  const html = articlePage(PAGE_SHAPES.medium);
  const domText = (() => {
    const page = pageToMarkdown(html, "https://news.example/tides");
    return `# ${page.title}\nBy ${page.byline}\n${page.markdown}`;
  })();
  const mf = startWorker(
    bundle("rewriter", resolve(".wrangler", "bench-web", "entries", "rewriter.ts")),
  );
  const url = await mf.ready;
  const rewriterText = await (await fetch(url, { method: "POST", body: html })).text();
  await mf.dispose();
  const article = Object.values(ARTICLE_MARKERS);
  return Object.entries({ dom: domText, rewriter: rewriterText }).map(
    ([kind, text]) =>
      `| ${kind} | ${article.filter((m) => text.includes(m)).length} | ${CHROME_MARKERS.filter((m) => text.includes(m)).length} | ${text.length} |`,
  );
}

await main();
