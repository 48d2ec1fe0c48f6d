// How many elements an HTML page holds and how deep they nest, counted in one linear pass over the
// text before anything builds a DOM. The reader's work (linkedom + Readability + the markdown
// writer) grows with both, with depth faster than linearly, and a Worker cannot interrupt a parse
// once it runs (security issue 38: 2,000 nested <div>s took 190 s): read_url measures a page first
// and refuses it over the limits. The count follows the tree rules of htmlparser2, linkedom's
// parser (void elements, tags that close an open <p> or <li>, raw text in <script> and <style>,
// `/>` inside <svg>); where it cannot be exact it counts more, never fewer (a tag cut off at the end).

export interface PageShape {
  /** Elements the parser would build. */
  elements: number;
  /** The deepest nesting of elements. */
  depth: number;
}

/**
 * The most elements a page may hold to be read. The reader costs about 0.1 ms of CPU per element
 * of an ordinary page, 0.2 ms at the depth limit with text at every level (bench/web-reader.ts:
 * the costliest page within both limits takes about 2x a 12,600-element encyclopedia article).
 */
export const MAX_PAGE_ELEMENTS = 15_000;
/**
 * The deepest nesting a page may have to be read. Readability's cleaning grows with the square of
 * depth for every element (one chain of 512 <div>s took 5 s, 15,000 elements 128 deep 5.5 s, 64
 * deep 2.7 s); Lighthouse already calls a page deeper than 32 excessive.
 */
export const MAX_PAGE_DEPTH = 64;

const P = new Set(["p"]);
const FORM = new Set(["input", "option", "optgroup", "select", "button", "datalist", "textarea"]);
const TABLE_SECTION = new Set(["thead", "tbody"]);
const DD_DT = new Set(["dd", "dt"]);
const RT_RP = new Set(["rt", "rp"]);
/** An opening tag closes these if they are the open element (htmlparser2's `openImpliesClose`). */
const IMPLIES_CLOSE = new Map<string, Set<string>>([
  ["tr", new Set(["tr", "th", "td"])],
  ["th", new Set(["th"])],
  ["td", new Set(["thead", "th", "td"])],
  ["body", new Set(["head", "link", "script"])],
  ["li", new Set(["li"])],
  ["option", new Set(["option"])],
  ["optgroup", new Set(["optgroup", "option"])],
  ["dd", DD_DT],
  ["dt", DD_DT],
  ["rt", RT_RP],
  ["rp", RT_RP],
  ["tbody", TABLE_SECTION],
  ["tfoot", TABLE_SECTION],
  ...["select", "input", "output", "button", "datalist", "textarea"].map(
    (tag) => [tag, FORM] as [string, Set<string>],
  ),
  ...[
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hr",
    "main",
    "nav",
    "ol",
    "pre",
    "section",
    "table",
    "ul",
  ].map((tag) => [tag, P] as [string, Set<string>]),
]);
const VOID = new Set([
  "area",
  "base",
  "basefont",
  "br",
  "col",
  "command",
  "embed",
  "frame",
  "hr",
  "img",
  "input",
  "isindex",
  "keygen",
  "link",
  "meta",
  "param",
  "source",
  "track",
  "wbr",
]);
/** Elements whose content is text up to their end tag (the tokenizer's "special" tags). */
const RAW_TEXT = new Set(["script", "style", "title", "textarea", "xmp"]);
const FOREIGN = new Set(["math", "svg"]);
const HTML_INTEGRATION = new Set([
  "mi",
  "mo",
  "mn",
  "ms",
  "mtext",
  "annotation-xml",
  "foreignobject",
  "desc",
  "title",
]);

const GT = 0x3e;
const SLASH = 0x2f;
const EQ = 0x3d;
const BANG = 0x21;
const QUESTION = 0x3f;
const DASH = 0x2d;
const DQ = 0x22;
const SQ = 0x27;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0c || c === 0x0d;
}
function isAlpha(c: number): boolean {
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x7a;
}
function endsName(c: number): boolean {
  return c === SLASH || c === GT || isSpace(c);
}

/** Counts `html`'s elements and depth as linkedom would build them, in one pass. */
export function measurePage(html: string): PageShape {
  const length = html.length;
  /** Open elements, innermost last. */
  const stack: string[] = [];
  /** How many of each name are open: a close tag of a name not open is skipped in O(1). */
  const open = new Map<string, number>();
  /** Inside <svg>/<math> (and not back in HTML), where `/>` closes an element. */
  const foreign: boolean[] = [false];
  let elements = 0;
  let depth = 0;

  const push = (name: string) => {
    stack.push(name);
    open.set(name, (open.get(name) ?? 0) + 1);
    if (stack.length > depth) depth = stack.length;
  };
  const pop = () => {
    const name = stack.pop()!;
    open.set(name, open.get(name)! - 1);
  };
  const openTag = (name: string) => {
    elements++;
    const closes = IMPLIES_CLOSE.get(name);
    if (closes) while (stack.length > 0 && closes.has(stack[stack.length - 1]!)) pop();
    if (VOID.has(name)) {
      if (stack.length + 1 > depth) depth = stack.length + 1;
      return;
    }
    push(name);
    if (FOREIGN.has(name)) foreign.push(true);
    else if (HTML_INTEGRATION.has(name)) foreign.push(false);
  };
  const closeTag = (name: string) => {
    if (FOREIGN.has(name) || HTML_INTEGRATION.has(name)) {
      if (foreign.length > 1) foreign.pop();
    }
    if (VOID.has(name)) {
      if (name === "br") {
        elements++; // `</br>` makes a <br>
        if (stack.length + 1 > depth) depth = stack.length + 1;
      }
      return;
    }
    if ((open.get(name) ?? 0) > 0) {
      while (stack.length > 0) {
        const top = stack[stack.length - 1]!;
        pop();
        if (top === name) break;
      }
    } else if (name === "p") {
      elements++; // `</p>` alone makes an empty <p>
      if (stack.length + 1 > depth) depth = stack.length + 1;
    }
  };
  let i = html.indexOf("<");
  while (i !== -1 && i < length - 1) {
    const c = html.charCodeAt(i + 1);
    let next = i + 1;
    if (c === BANG) {
      // A comment runs to `-->` (its opening dashes count, so `<!-->` is one), CDATA (a comment
      // in HTML) to `]]>`, a declaration to `>`.
      if (html.charCodeAt(i + 2) === DASH && html.charCodeAt(i + 3) === DASH) {
        const end = html.indexOf("-->", i + 2);
        next = end === -1 ? length : end + 3;
      } else if (html.startsWith("[CDATA[", i + 2)) {
        const end = html.indexOf("]]>", i + 9);
        next = end === -1 ? length : end + 3;
      } else {
        const end = html.indexOf(">", i + 2);
        next = end === -1 ? length : end + 1;
      }
    } else if (c === QUESTION) {
      const end = html.indexOf(">", i + 2);
      next = end === -1 ? length : end + 1;
    } else if (c === SLASH) {
      let j = i + 2;
      while (j < length && isSpace(html.charCodeAt(j))) j++;
      if (j < length && isAlpha(html.charCodeAt(j))) {
        let k = j;
        while (k < length && html.charCodeAt(k) !== GT && !isSpace(html.charCodeAt(k))) k++;
        if (k < length) closeTag(html.slice(j, k).toLowerCase());
        j = k;
      }
      const end = html.indexOf(">", j);
      next = end === -1 ? length : end + 1;
    } else if (isAlpha(c)) {
      let k = i + 2;
      while (k < length && !endsName(html.charCodeAt(k))) k++;
      if (k >= length) break; // a tag cut off by the end of the text is dropped
      const name = html.slice(i + 1, k).toLowerCase();
      openTag(name);
      const tagEnd = endOfOpenTag(html, k);
      if (tagEnd.selfClosing && foreign[foreign.length - 1] && stack.at(-1) === name) pop();
      next = tagEnd.next;
      if (RAW_TEXT.has(name) && !tagEnd.selfClosing && next < length) {
        // Text up to `</name` and a space or `>`, exactly: ending it anywhere else could start
        // another raw text the parser does not see, and hide markup it builds.
        const close = new RegExp(`</${name}[\\t\\n\\f\\r >]`, "ig");
        close.lastIndex = next;
        const found = close.exec(html);
        next = found ? found.index : length;
      }
    }
    i = html.indexOf("<", next);
  }
  return { elements, depth };
}

/**
 * Where an open tag whose name ends at `from` ends, through its attributes as the tokenizer reads
 * them (a quoted value may hold `>`), and whether it ends with `/>`.
 */
function endOfOpenTag(html: string, from: number): { next: number; selfClosing: boolean } {
  const length = html.length;
  let j = from;
  let afterSlash = false;
  while (j < length) {
    const c = html.charCodeAt(j);
    if (c === GT) return { next: j + 1, selfClosing: afterSlash };
    if (c === SLASH) {
      afterSlash = true;
      j++;
      continue;
    }
    if (isSpace(c)) {
      j++;
      continue;
    }
    afterSlash = false;
    // An attribute name, then perhaps `=` and a value.
    while (j < length && html.charCodeAt(j) !== EQ && !endsName(html.charCodeAt(j))) j++;
    while (j < length && isSpace(html.charCodeAt(j))) j++;
    if (j >= length || html.charCodeAt(j) !== EQ) continue;
    j++;
    while (j < length && isSpace(html.charCodeAt(j))) j++;
    const quote = html.charCodeAt(j);
    if (quote === DQ || quote === SQ) {
      const end = html.indexOf(quote === DQ ? '"' : "'", j + 1);
      j = end === -1 ? length : end + 1;
    } else {
      while (j < length && html.charCodeAt(j) !== GT && !isSpace(html.charCodeAt(j))) j++;
    }
  }
  return { next: length, selfClosing: false };
}
