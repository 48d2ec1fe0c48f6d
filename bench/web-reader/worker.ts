// The benchmark's worker (bench/web-reader.ts): turns a generated page into markdown N times per
// request with the chosen reader (linkedom + Readability + node-html-markdown) or with
// HTMLRewriter alone, so the client can time CPU per page in workerd itself.
import { pageToMarkdown } from "../../src/plugins/web/page-to-markdown.ts";
import { articlePage, PAGE_SHAPES } from "../../test/peers/web-pages.ts";
import { rewriterMarkdown } from "./rewriter-markdown.ts";

const pages = new Map<string, string>();

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
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
