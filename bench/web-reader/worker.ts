// The benchmark's worker (bench/web-reader.ts): turns a generated page into markdown N times per
// request with the chosen reader (linkedom + Readability + node-html-markdown) or with
// HTMLRewriter alone, so the client can time CPU per page in workerd itself. `/read` runs
// read_url's whole path (measure, refuse or read) on the pages of BOUNDS_PAGES.
import { pageToMarkdown } from "../../src/plugins/web/page-to-markdown.ts";
import { readUrl } from "../../src/plugins/web/read-url.ts";
import { articlePage, PAGE_SHAPES } from "../../test/peers/web-pages.ts";
import { BOUNDS_PAGES } from "./bounds-pages.ts";
import { rewriterMarkdown } from "./rewriter-markdown.ts";

const pages = new Map<string, string>();

async function read(name: string, times: number): Promise<Response> {
  const make = BOUNDS_PAGES[name];
  if (!make) return new Response(`no page ${name}`, { status: 404 });
  const key = `bounds:${name}`;
  let html = pages.get(key);
  if (!html) {
    html = make();
    pages.set(key, html);
  }
  const page = html;
  const served = async () =>
    new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } });
  let outcome: Awaited<ReturnType<typeof readUrl>> | null = null;
  for (let i = 0; i < times; i++)
    outcome = await readUrl(served, "https://pages.example/page", 12_000);
  return Response.json(
    outcome?.ok
      ? { ok: true, chars: outcome.page.totalChars }
      : { ok: false, error: outcome?.error ?? "" },
  );
}

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/read") {
      return read(url.searchParams.get("page") ?? "", Number(url.searchParams.get("n") ?? "1"));
    }
    const name = (url.searchParams.get("page") ?? "small") as keyof typeof PAGE_SHAPES;
    const times = Number(url.searchParams.get("n") ?? "1");
    if (url.pathname === "/noop") return new Response("0");
    let html = pages.get(name);
    if (!html) {
      html = articlePage(PAGE_SHAPES[name]);
      pages.set(name, html);
    }
    let size = 0;
    for (let i = 0; i < times; i++) {
      size =
        url.pathname === "/dom"
          ? pageToMarkdown(html, "https://news.example/tides").markdown.length
          : (await rewriterMarkdown(html, "https://news.example/tides")).length;
    }
    return new Response(String(size));
  },
};
