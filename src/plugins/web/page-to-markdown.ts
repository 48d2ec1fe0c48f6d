// An HTML page as clean markdown for a model: the article (Mozilla's Readability over a linkedom
// DOM: main content, not navigation, ads, scripts or footers), its title, byline and site, links
// made absolute, images dropped; then node-html-markdown writes the markdown (markdown-writer.ts).
// A page Readability does not take for an article falls back to its body with the usual clutter
// removed. Why a DOM and not HTMLRewriter: docs/plugins.md#the-web-reader (measured in
// bench/web-reader.ts). The work grows faster than the page: callers measure it first
// (page-shape.ts, read-url.ts).
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { elementToMarkdown, type HtmlNode } from "./markdown-writer.ts";

export interface ReadPage {
  title: string | null;
  byline: string | null;
  siteName: string | null;
  markdown: string;
}

/** Elements that are never the content a reader wants, removed before anything else. */
const CLUTTER = [
  "script",
  "style",
  "noscript",
  "template",
  "iframe",
  "object",
  "embed",
  "svg",
  "canvas",
  "form",
  "button",
  "input",
  "select",
  "textarea",
];
/** Only for the fallback: page chrome Readability would have left out. */
const CHROME = ["nav", "header", "footer", "aside", "[role=navigation]", "[role=banner]"];
/** Class or id words of ads and promotions, which sit inside articles too; removed first. */
const AD_NAMES =
  /(^|[\s_-])(advert\w*|ads?|sponsor\w*|promo\w*|cookie\w*|newsletter|share|social|subscribe)([\s_-]|$)/i;
/** Class or id words of page chrome, for the fallback only. */
const CHROME_NAMES =
  /(^|[\s_-])(nav|menu|footer|sidebar|banner|related|comments?|breadcrumbs?)([\s_-]|$)/i;

/** `html` fetched from `url` (for absolute links) as markdown, with its metadata. */
export function pageToMarkdown(html: string, url: string): ReadPage {
  const { document } = parseHTML(html);
  for (const element of document.querySelectorAll(CLUTTER.join(","))) element.remove();
  removeNamed(document, AD_NAMES);
  absoluteLinks(document, url);
  // Readability's own typing names the DOM's Document; linkedom's is the same shape. The article
  // comes back as its element (not its HTML), which the writer walks without parsing it again.
  const article = new Readability<HtmlNode>(
    document.cloneNode(true) as unknown as ConstructorParameters<typeof Readability>[0],
    { charThreshold: 200, serializer: (node) => node as unknown as HtmlNode },
  ).parse();
  const title = clean(article?.title) ?? clean(document.querySelector("title")?.textContent);
  if (article?.content) {
    return {
      title,
      byline: clean(article.byline),
      siteName: clean(article.siteName),
      markdown: tidy(elementToMarkdown(article.content)),
    };
  }
  for (const element of document.querySelectorAll(CHROME.join(","))) element.remove();
  removeNamed(document, CHROME_NAMES);
  const body = document.querySelector("body") ?? document;
  return { title, byline: null, siteName: null, markdown: tidy(elementToMarkdown(body)) };
}

type Dom = ReturnType<typeof parseHTML>["document"];

function removeNamed(document: Dom, names: RegExp): void {
  for (const element of document.querySelectorAll("[class],[id]")) {
    const words = `${element.getAttribute("class") ?? ""} ${element.getAttribute("id") ?? ""}`;
    if (names.test(words)) element.remove();
  }
}

/** Links resolved against the page (a model cannot follow `/moon`); script links dropped. */
function absoluteLinks(document: Dom, url: string): void {
  for (const link of document.querySelectorAll("a[href]")) {
    const href = link.getAttribute("href") ?? "";
    let target: URL | null = null;
    try {
      target = new URL(href, url);
    } catch {
      target = null;
    }
    if (target && (target.protocol === "https:" || target.protocol === "http:"))
      link.setAttribute("href", target.href);
    else link.removeAttribute("href");
  }
}

function clean(text: string | null | undefined): string | null {
  const line = text?.replace(/\s+/g, " ").trim();
  return line ? line : null;
}

function tidy(markdown: string): string {
  return markdown
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
