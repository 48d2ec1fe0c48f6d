// read_url's page measure (src/plugins/web/page-shape.ts) against the tree linkedom really builds:
// it must never count fewer elements or a shallower tree than the parser makes, or a page could
// slip past the limits; on ordinary HTML it counts exactly. Random tag soups from a fixed seed
// search the tokenizer's corners (raw text, comments, CDATA, attributes, svg, implied closes).
import { parseHTML } from "linkedom";
import { describe, expect, it } from "vitest";
import { measurePage } from "../../../src/plugins/web/page-shape.ts";
import { encyclopediaArticle, nestedDivs } from "../../peers/web-attack-pages.ts";
import { articlePage, PAGE_SHAPES } from "../../peers/web-pages.ts";

interface TreeNode {
  children: ArrayLike<TreeNode> & Iterable<TreeNode>;
}

/** Elements and depth of the DOM linkedom builds from `html`. */
function built(html: string): { elements: number; depth: number } {
  const { document } = parseHTML(html);
  let elements = 0;
  let depth = 0;
  const walk = (element: TreeNode, level: number) => {
    elements++;
    depth = Math.max(depth, level);
    for (const child of element.children) walk(child, level + 1);
  };
  for (const child of (document as unknown as TreeNode).children) walk(child, 1);
  return { elements, depth };
}

const SOUP = [
  "<div>",
  "</div>",
  "<p>",
  "</p>",
  "<li>",
  "<ul>",
  "</ul>",
  "<td>",
  "<tr>",
  "<table>",
  "</table>",
  "<svg>",
  "</svg>",
  "<path/>",
  "<g>",
  "</g>",
  "<br>",
  "</br>",
  "<img src=x>",
  "<script>",
  "</script>",
  "<style>",
  "</style >",
  "<title>",
  "</title>",
  "<!--",
  "-->",
  "<!-->",
  "<![CDATA[",
  "]]>",
  "<!x>",
  "<?x>",
  "<a title='",
  "'",
  '"',
  ">",
  "<",
  "/>",
  "x",
  "&amp;",
  " ",
  "<textarea>",
  "</textarea/>",
  "<xmp>",
  "</xmp>",
  "<math>",
  "<mi>",
  "</mi>",
  "<option>",
  "<select>",
  "<b",
  "</b",
  "<foreignObject>",
  "<desc>",
  "</desc>",
  "<span/>",
  '<div a="',
  "= ",
  "</ p>",
  "</",
  "<SCRIPT>",
  "</SCRIPT>",
  "\n",
];

describe("measurePage counts what linkedom builds", () => {
  it("counts ordinary pages exactly", () => {
    for (const html of [
      articlePage(PAGE_SHAPES.small),
      articlePage(PAGE_SHAPES.large),
      encyclopediaArticle(4),
      nestedDivs(100),
      "<ul><li>a<li>b<li><ul><li>c<li>d</ul></ul><p>x<p>y<div>z</div>",
      "<table><tr><td>a<td>b<tr><td>c</table><select><option>a<option>b</select>",
      "<div><svg><path d='x'/><path/><g><circle/></g></svg><p>after<br><img src=a></div>",
    ])
      expect(measurePage(html), html.slice(0, 80)).toEqual(built(html));
  });

  it("sees no markup in script, style, comments, CDATA or attribute values", () => {
    const html =
      "<script>var a='<div><div>';</script><style>p{}</style><!-- <div><div> -->" +
      "<![CDATA[<p><p>]]><div title='a>b' data-x=\"<p><p>\"><b>x</b></div>";
    expect(measurePage(html)).toEqual({ elements: 4, depth: 2 });
    expect(built(html)).toEqual({ elements: 4, depth: 2 });
  });

  it("counts what a self-closed <script/> leaves open as markup, as the parser does", () => {
    const html = `<script/>${"<div>".repeat(80)}</script>`;
    expect(measurePage(html)).toEqual(built(html));
    expect(measurePage(html).depth).toBe(81);
  });

  it("never counts fewer elements or less depth than linkedom, over 3,000 tag soups", () => {
    let seed = 20_261_127;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    let exact = 0;
    for (let round = 0; round < 3_000; round++) {
      let html = "";
      const pieces = 1 + Math.floor(random() * 40);
      for (let i = 0; i < pieces; i++) html += SOUP[Math.floor(random() * SOUP.length)];
      const measured = measurePage(html);
      const real = built(html);
      expect(measured.elements, html).toBeGreaterThanOrEqual(real.elements);
      expect(measured.depth, html).toBeGreaterThanOrEqual(real.depth);
      if (measured.elements === real.elements && measured.depth === real.depth) exact++;
    }
    // Over-counts come only from a tag cut off by the end of the text.
    expect(exact).toBeGreaterThan(2_500);
  });
});
