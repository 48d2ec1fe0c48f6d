// read_url's markdown writer (src/plugins/web/markdown-writer.ts) hands node-html-markdown runs of
// a few kB, since one call costs (pieces x text written). What a reader sees must not change for
// ordinary pages, and a big list, table or code block comes out as pieces of its own kind.
import { parseHTML } from "linkedom";
import { NodeHtmlMarkdown } from "node-html-markdown";
import { describe, expect, it } from "vitest";
import {
  elementToMarkdown,
  type HtmlNode,
  MARKDOWN_RUN_CHARS,
} from "../../../src/plugins/web/markdown-writer.ts";

function bodyOf(html: string): HtmlNode {
  const { document } = parseHTML(`<html><body>${html}</body></html>`);
  return document.querySelector("body") as unknown as HtmlNode;
}

const oneCall = new NodeHtmlMarkdown({
  maxConsecutiveNewlines: 2,
  useLinkReferenceDefinitions: false,
});

describe("elementToMarkdown", () => {
  it("writes a page of many blocks as one call would", () => {
    const html = Array.from(
      { length: 400 },
      (_, i) =>
        `<h2>Part ${i}</h2><p>Tides <b>rise</b> and <a href="https://sea.example/${i}">fall</a>.</p><ul><li>one</li><li>two</li></ul>`,
    ).join("\n");
    expect(html.length).toBeGreaterThan(4 * MARKDOWN_RUN_CHARS);
    expect(elementToMarkdown(bodyOf(html))).toBe(oneCall.translate(html).trim());
  });

  it("numbers a long ordered list on across its pieces", () => {
    const items = Array.from({ length: 2_000 }, (_, i) => `<li>Step ${i + 1} of the climb</li>`);
    const markdown = elementToMarkdown(bodyOf(`<ol>${items.join("")}</ol>`));
    const numbers = markdown.match(/^\d+\. /gm)?.map((n) => Number.parseInt(n, 10)) ?? [];
    expect(numbers).toEqual(Array.from({ length: 2_000 }, (_, i) => i + 1));
    expect(markdown).toContain("2000. Step 2000 of the climb");
  });

  it("heads every piece of a long table with the table's header row", () => {
    const rows = Array.from(
      { length: 1_500 },
      (_, i) => `<tr><td>${i}</td><td>06:${i % 60}</td></tr>`,
    );
    const markdown = elementToMarkdown(
      bodyOf(
        `<table><thead><tr><th>Day</th><th>High water</th></tr></thead><tbody>${rows.join("")}</tbody></table>`,
      ),
    );
    const headers = markdown.match(/^\| Day +\| High water +\|$/gm) ?? [];
    expect(headers.length).toBeGreaterThan(1);
    expect(markdown).toMatch(/^\| 1499 +\| 06:59 +\|$/m);
  });

  it("keeps a long code block as code, in fenced pieces", () => {
    const lines = Array.from({ length: 3_000 }, (_, i) => `<span>let tide${i} = ${i};</span>\n`);
    const markdown = elementToMarkdown(bodyOf(`<pre><code>${lines.join("")}</code></pre>`));
    expect(markdown).toContain("let tide0 = 0;\nlet tide1 = 1;");
    expect(markdown).toContain("let tide2999 = 2999;");
    expect(markdown.startsWith("```")).toBe(true);
  });
});
