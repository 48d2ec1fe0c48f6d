// Reading one web page for an agent: fetched through the guarded fetch (https and public addresses
// only, redirects re-checked, 10 s, 2 MiB), HTML measured (page-shape.ts) and, within the limits,
// turned into clean markdown (page-to-markdown.ts), plain text and JSON passed through, anything
// else refused with the reason. Errors name the origin and the rule, never what the remote answered.
import { AppError } from "../../runtime/util/errors.ts";
import { pageToMarkdown } from "./page-to-markdown.ts";
import { MAX_PAGE_DEPTH, MAX_PAGE_ELEMENTS, measurePage } from "./page-shape.ts";

export interface ReadResult {
  url: string;
  contentType: string;
  title: string | null;
  byline: string | null;
  siteName: string | null;
  /** Markdown for HTML; the text itself for plain text and JSON. */
  text: string;
  /** Characters before the cut to `maxChars`. */
  totalChars: number;
  truncated: boolean;
}

export type ReadOutcome = { ok: true; page: ReadResult } | { ok: false; error: string };

const HTML = new Set(["text/html", "application/xhtml+xml"]);
const TEXT = new Set(["text/plain", "text/markdown", "text/csv", "application/json"]);
const ACCEPT =
  "text/html, application/xhtml+xml, text/plain, text/markdown, application/json;q=0.9";
/** NUL and other C0 controls that text never holds: the body is binary whatever its label says. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: binary bytes are what it detects
const BINARY = /[\u0000-\u0008\u000e-\u001a]/;

export async function readUrl(
  fetcher: typeof fetch,
  raw: string,
  maxChars: number,
  signal?: AbortSignal,
): Promise<ReadOutcome> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, error: "that is not a valid URL" };
  }
  let response: Response;
  try {
    response = await fetcher(url.href, {
      headers: { accept: ACCEPT, "user-agent": "edge-agents-web-reader/1.0" },
      signal,
    });
  } catch (error) {
    // The guarded fetch's refusals and limits carry our own message (origin and rule).
    if (error instanceof AppError) return { ok: false, error: error.message };
    return { ok: false, error: `${url.origin} could not be reached` };
  }
  if (!response.ok) {
    await response.body?.cancel();
    return { ok: false, error: `${url.origin} answered with HTTP ${response.status}` };
  }
  const header = response.headers.get("content-type") ?? "";
  const [type = "", ...params] = header.split(";").map((part) => part.trim().toLowerCase());
  const json = type.endsWith("+json");
  if (!HTML.has(type) && !TEXT.has(type) && !json) {
    await response.body?.cancel();
    return {
      ok: false,
      error: `${url.href} is ${type ? `\`${type}\`` : "of no declared type"}; read_url reads web pages (HTML), plain text and JSON only`,
    };
  }
  let bytes: ArrayBuffer;
  try {
    bytes = await response.arrayBuffer();
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error: error.message };
    return { ok: false, error: `${url.origin} broke off its answer` };
  }
  const body = decode(bytes, params);
  if (BINARY.test(body.slice(0, 4096)))
    return {
      ok: false,
      error: `${url.href} is binary content labelled \`${type}\`; read_url reads text only`,
    };
  if (HTML.has(type)) {
    // Measured before any parse: the reader's work grows faster than the page, and a Worker
    // cannot stop a parse that has started (security issue 38).
    const shape = measurePage(body);
    if (shape.elements > MAX_PAGE_ELEMENTS || shape.depth > MAX_PAGE_DEPTH)
      return {
        ok: false,
        error: `${url.href} has ${count(shape.elements)} elements nested ${count(shape.depth)} deep; read_url reads pages of at most ${count(MAX_PAGE_ELEMENTS)} elements nested at most ${count(MAX_PAGE_DEPTH)} deep`,
      };
  }
  const page = HTML.has(type)
    ? pageToMarkdown(body, url.href)
    : { title: null, byline: null, siteName: null, markdown: body };
  const text = page.markdown;
  return {
    ok: true,
    page: {
      url: url.href,
      contentType: type,
      title: page.title,
      byline: page.byline,
      siteName: page.siteName,
      text: text.length > maxChars ? text.slice(0, maxChars) : text,
      totalChars: text.length,
      truncated: text.length > maxChars,
    },
  };
}

function decode(bytes: ArrayBuffer, params: string[]): string {
  const charset = params
    .find((param) => param.startsWith("charset="))
    ?.slice(8)
    .replace(/"/g, "");
  try {
    return new TextDecoder(charset || "utf-8").decode(bytes);
  } catch {
    // An unknown label: UTF-8 is what the web mostly is.
    return new TextDecoder("utf-8").decode(bytes);
  }
}

/** 12345 as "12,345". */
function count(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}
