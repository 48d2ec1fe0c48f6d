// An element's content as markdown, written by node-html-markdown a run of about
// MARKDOWN_RUN_CHARS of HTML at a time. The writer re-reads all it has written after each piece
// it appends (a trailing-whitespace check, and a re-slice for every link, list item or emphasis),
// so one call costs (pieces x text written): 8,000 short paragraphs took 4-7 s in one call, one
// <li> of 10,000 links 15 s. In runs the cost is the page's length times one run. Runs end between
// blocks and join with a blank line, as the writer separates blocks itself; a bigger block is
// written in pieces of its own kind (a list as lists, a table as tables under its header row), and
// a bigger element of any other kind by its content, losing only its own mark-up.
import { NodeHtmlMarkdown } from "node-html-markdown";

/** HTML handed to the writer at once, in characters: its cost grows with the square of this. */
export const MARKDOWN_RUN_CHARS = 8_000;
/** Inline content this long is cut even mid-paragraph (a blank line where a space was). */
const MAX_INLINE_RUN_CHARS = 2 * MARKDOWN_RUN_CHARS;

const converter = new NodeHtmlMarkdown({
  ignore: ["img", "picture", "video", "audio", "source", "figure > img"],
  maxConsecutiveNewlines: 2,
  useLinkReferenceDefinitions: false,
});

/** Elements the writer sets apart as blocks: a run may end before or after one. */
const BLOCKS = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "center",
  "details",
  "div",
  "dl",
  "fieldset",
  "figure",
  "footer",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "header",
  "hr",
  "li",
  "main",
  "nav",
  "ol",
  "p",
  "pre",
  "section",
  "table",
  "td",
  "th",
  "tr",
  "ul",
]);
/** Blocks that add nothing to the markdown around their content: a big one is written inside. */
const WRAPPERS = new Set([
  "article",
  "aside",
  "body",
  "center",
  "div",
  "footer",
  "header",
  "html",
  "main",
  "nav",
  "section",
]);
/** Blocks a big one of which is written as several of the same kind. */
const REPEATABLE = new Set(["blockquote", "dl", "ol", "p", "ul"]);

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;

/** The DOM shape this needs (linkedom's nodes; `toString()` is the node's HTML, text escaped). */
export interface HtmlNode {
  nodeType: number;
  childNodes: ArrayLike<HtmlNode> & Iterable<HtmlNode>;
  localName?: string;
  getAttribute?(name: string): string | null;
  toString(): string;
}

/** A big block as pieces: each is `open`, some of `items`, `close`. */
interface Pieces {
  open: string;
  items: HtmlNode[];
  close: string;
  /** An ordered list: each piece's numbers go on from the last's. */
  numbered: boolean;
}

/** The markdown of `root`'s content. */
export function elementToMarkdown(root: HtmlNode): string {
  const sizes = new Map<HtmlNode, number>();
  htmlSize(root, sizes);
  const parts: string[] = [];
  let run: string[] = [];
  let runChars = 0;
  const flush = () => {
    if (runChars > 0) push(converter.translate(run.join("")));
    run = [];
    runChars = 0;
  };
  const push = (markdown: string) => {
    const trimmed = markdown.trim();
    if (trimmed) parts.push(trimmed);
  };

  const add = (node: HtmlNode) => {
    if (node.nodeType !== ELEMENT_NODE && node.nodeType !== TEXT_NODE) return;
    const name = nameOf(node);
    const block = BLOCKS.has(name);
    const size = sizes.get(node) ?? 0;
    if (node.nodeType === ELEMENT_NODE && size > MARKDOWN_RUN_CHARS) {
      if (block) flush();
      const pieces = WRAPPERS.has(name) ? null : piecesOf(node, name, sizes);
      if (pieces) writePieces(pieces);
      else for (const child of node.childNodes) add(child);
      if (block) flush();
      return;
    }
    if (block && runChars + size > MARKDOWN_RUN_CHARS) flush();
    run.push(node.toString());
    runChars += size;
    if ((block && runChars >= MARKDOWN_RUN_CHARS) || runChars >= MAX_INLINE_RUN_CHARS) flush();
  };

  const writePieces = ({ open, items, close, numbered }: Pieces) => {
    let group: string[] = [];
    let groupChars = 0;
    let itemsBefore = 0;
    let groupItems = 0;
    const emit = () => {
      if (group.length > 0) {
        const markdown = converter.translate(`${open}${group.join("")}${close}`);
        push(numbered ? renumber(markdown, itemsBefore) : markdown);
      }
      itemsBefore += groupItems;
      group = [];
      groupChars = 0;
      groupItems = 0;
    };
    for (const item of items) {
      const size = sizes.get(item) ?? 0;
      if (groupChars + size > MARKDOWN_RUN_CHARS) emit();
      if (size > MARKDOWN_RUN_CHARS) {
        // One item bigger than a run: written by its content, without the list's bullet.
        add(item);
        flush();
        if (item.nodeType === ELEMENT_NODE) itemsBefore++;
        continue;
      }
      group.push(item.toString());
      groupChars += size;
      if (item.nodeType === ELEMENT_NODE) groupItems++;
    }
    emit();
  };

  for (const child of root.childNodes) add(child);
  flush();
  return parts.join("\n\n");
}

/** How a big block splits into pieces of its own kind, or null if it is written by its content. */
function piecesOf(node: HtmlNode, name: string, sizes: Map<HtmlNode, number>): Pieces | null {
  const children = [...node.childNodes].filter(
    (child) => child.nodeType === ELEMENT_NODE || child.nodeType === TEXT_NODE,
  );
  if (REPEATABLE.has(name)) {
    return { open: `<${name}>`, items: children, close: `</${name}>`, numbered: name === "ol" };
  }
  if (name === "pre") {
    // Code is mostly <pre><code>...</code></pre>: the pieces are the code's.
    const only = children.length === 1 ? children[0]! : null;
    if (only && nameOf(only) === "code")
      return {
        open: "<pre><code>",
        items: [...only.childNodes],
        close: "</code></pre>",
        numbered: false,
      };
    return { open: "<pre>", items: children, close: "</pre>", numbered: false };
  }
  if (name === "table") {
    // Rows, in sections or not; the first row heads every piece, as it heads the table.
    const rows: HtmlNode[] = [];
    let caption = "";
    for (const child of children) {
      const childName = nameOf(child);
      if (childName === "tr") rows.push(child);
      else if (childName === "thead" || childName === "tbody" || childName === "tfoot") {
        for (const row of child.childNodes) if (nameOf(row) === "tr") rows.push(row);
      } else if (childName === "caption") caption = child.toString();
    }
    const [header, ...body] = rows;
    if (!header || body.length === 0 || (sizes.get(header) ?? 0) > MARKDOWN_RUN_CHARS) return null;
    return {
      open: `<table>${caption}${header.toString()}`,
      items: body,
      close: "</table>",
      numbered: false,
    };
  }
  return null;
}

/** `markdown`'s top-level list numbers 1, 2, ... as `offset` + 1, `offset` + 2, ... */
function renumber(markdown: string, offset: number): string {
  if (offset === 0) return markdown;
  let next = 1;
  return markdown
    .split("\n")
    .map((line) => {
      if (!line.startsWith(`${next}. `)) return line;
      const renumbered = `${next + offset}${line.slice(String(next).length)}`;
      next++;
      return renumbered;
    })
    .join("\n");
}

/** A node's tag name in lower case (elements Readability made are named in capitals). */
function nameOf(node: HtmlNode): string {
  return node.nodeType === ELEMENT_NODE ? (node.localName ?? "").toLowerCase() : "";
}

/**
 * About how many characters of HTML each node of `root` serializes to (its text, its tags twice
 * and a link's address), in one pass over the tree, so no node is serialized to be measured.
 */
function htmlSize(root: HtmlNode, sizes: Map<HtmlNode, number>): number {
  let size = 0;
  if (root.nodeType === TEXT_NODE) size = root.toString().length;
  else if (root.nodeType === ELEMENT_NODE) {
    const name = nameOf(root);
    size = 2 * name.length + 5;
    if (name === "a") size += root.getAttribute?.("href")?.length ?? 0;
    for (const child of root.childNodes) size += htmlSize(child, sizes);
  }
  sizes.set(root, size);
  return size;
}
