// The web reader's two candidates, measured where they would run: each is bundled by wrangler
// (the bytes it adds to the worker) and run in local workerd on generated news pages of three
// sizes (CPU per page: wall time of N conversions in one request, minus an empty request, over
// N). `dom` is linkedom + Readability + node-html-markdown (src/plugins/web/), `rewriter` is
// HTMLRewriter alone (bench/web-reader/rewriter-markdown.ts). Also reports how much of the
// article and of the page chrome each keeps. Run: `npm run bench:web`.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { convertV4MiniflareOptions, Miniflare } from "miniflare";
import { pageToMarkdown } from "../src/plugins/web/page-to-markdown.ts";
import {
  ARTICLE_MARKERS,
  articlePage,
  CHROME_MARKERS,
  PAGE_SHAPES,
} from "../test/peers/web-pages.ts";
import { summarize } from "./stats.ts";

const ROUNDS = 15;
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

async function main(): Promise<void> {
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
  const time = async (path: string): Promise<number> => {
    const started = performance.now();
    await (await fetch(new URL(path, url))).text();
    return performance.now() - started;
  };
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
