// Pages that cost the web reader more than their bytes (security issue 38, hole 5), and big pages
// it must still read, for test/security/web-reader-bounds.test.ts and bench/web-reader.ts. The
// audit's pages: 2,000 nested <div>s (22 KB, 190 s of parse), 1.8 MB of flat paragraphs (205 s),
// nesting 10,000 deep (a 500). Plain strings, no Node or vitest imports.

const WORDS = "Tides rise and fall on a rhythm set by the moon and, to a lesser degree, the sun.";

/** `depth` <div>s, each inside the last, around one word (the audit's 2,000 made 22 KB). */
export function nestedDivs(depth: number): string {
  return `<!doctype html><html><head><title>Deep</title></head><body>${"<div>".repeat(depth)}x${"</div>".repeat(depth)}</body></html>`;
}

/** `count` short paragraphs side by side, about 40 bytes each (1.8 MB is about 45,000). */
export function flatParagraphs(count: number): string {
  const paragraphs = Array.from(
    { length: count },
    (_, i) => `<p>Paragraph ${i} of a flat page.</p>`,
  );
  return `<!doctype html><html><head><title>Flat</title></head><body>\n${paragraphs.join("\n")}\n</body></html>`;
}

/**
 * Chains of `depth` nested <div>s, each level with a sentence, until the page holds about
 * `elements`: the most nesting and text per element a page within the limits can have.
 */
export function deepChains(elements: number, depth: number): string {
  const chain = `${`<div>${WORDS} `.repeat(depth)}${"</div>".repeat(depth)}`;
  const chains = Array.from({ length: Math.floor((elements - 4) / depth) }, () => chain);
  return `<!doctype html><html><head><title>Chains</title></head><body>\n${chains.join("\n")}\n</body></html>`;
}

/** One paragraph of `count` emphasized words: many small pieces for the markdown writer. */
export function emphasizedParagraph(count: number): string {
  const words = Array.from({ length: count }, (_, i) => `<b>tide ${i}</b> rises and falls, `);
  return `<!doctype html><html><head><title>Long</title></head><body><article><h1>Long</h1><p>${words.join("")}</p></article></body></html>`;
}

/**
 * A long encyclopedia article as such sites write one (about 600 kB, 9,000 elements): site chrome,
 * an infobox, sections of paragraphs thick with links and footnote markers, figures, a reference
 * list of hundreds of citations and navigation boxes at the end.
 */
export function encyclopediaArticle(sections = 24): string {
  let ref = 0;
  const cite = () => {
    ref++;
    return `<sup id="cite_ref-${ref}" class="reference"><a href="#cite_note-${ref}"><span class="cite-bracket">[</span>${ref}<span class="cite-bracket">]</span></a></sup>`;
  };
  const link = (i: number) => `<a href="/wiki/Topic_${i}" title="Topic ${i}">topic ${i}</a>`;
  const paragraph = (i: number) =>
    `<p>${WORDS} Seen from ${link(i)} and ${link(i + 1)}, the effect ${cite()} is larger where ${link(i + 2)} meets ${link(i + 3)}.${cite()} The <b>range</b> of a ${link(i + 4)} depends on the basin ${cite()} and on ${link(i + 5)}, ${link(i + 6)} and ${link(i + 7)}.${cite()}</p>`;
  const menu = Array.from(
    { length: 120 },
    (_, i) =>
      `<li id="n-${i}" class="mw-list-item"><a href="/wiki/Portal_${i}"><span>Portal ${i}</span></a></li>`,
  ).join("");
  const infobox = Array.from(
    { length: 40 },
    (_, i) =>
      `<tr><th scope="row" class="infobox-label">Property ${i}</th><td class="infobox-data">${link(i)}<br><span class="nowrap">${i * 7} units</span>${cite()}</td></tr>`,
  ).join("");
  const body = Array.from({ length: sections }, (_, s) => {
    const paragraphs = Array.from({ length: 6 }, (_, p) => paragraph(s * 10 + p)).join("\n");
    const figure =
      s % 3 === 0
        ? `<figure class="mw-default-size"><a href="/wiki/File:Tide_${s}.jpg" class="mw-file-description"><img src="/img/${s}.jpg" width="220" height="150"></a><figcaption>Tide chart ${s} ${cite()}</figcaption></figure>`
        : "";
    return `<div class="mw-heading mw-heading2"><h2 id="Section_${s}">Section ${s}</h2><span class="mw-editsection"><span class="mw-editsection-bracket">[</span><a href="/w/index.php?action=edit&amp;section=${s}">edit</a><span class="mw-editsection-bracket">]</span></span></div>\n${figure}${paragraphs}`;
  }).join("\n");
  const references = Array.from(
    { length: ref },
    (_, i) =>
      `<li id="cite_note-${i + 1}"><span class="mw-cite-backlink"><b><a href="#cite_ref-${i + 1}">^</a></b></span> <span class="reference-text"><cite class="citation journal">Author ${i} (${1950 + (i % 70)}). <a class="external text" href="https://journal.example/${i}">"On tides, part ${i}"</a>. <i>Journal of the Sea</i>. <b>${i % 40}</b>: ${i}–${i + 9}. <a href="/wiki/Doi_(identifier)">doi</a>:<a class="external text" href="https://doi.example/10.1/${i}">10.1/${i}</a>.</cite></span></li>`,
  ).join("\n");
  const navbox = (n: number) =>
    `<div role="navigation" class="navbox"><table class="nowraplinks"><tbody>${Array.from(
      { length: 12 },
      (_, r) =>
        `<tr><th class="navbox-group">Group ${r}</th><td class="navbox-list"><div><ul>${Array.from({ length: 12 }, (_, i) => `<li>${link(n * 1000 + r * 12 + i)}</li>`).join("")}</ul></div></td></tr>`,
    ).join("")}</tbody></table></div>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tide - Encyclopedia</title>
<link rel="stylesheet" href="/load.css"><script>var config={"wgPageName":"Tide"};</script></head>
<body class="skin-vector"><a class="mw-jump-link" href="#content">Jump to content</a>
<div class="vector-header-container"><header class="vector-header"><nav class="vector-main-menu" role="navigation"><ul>${menu}</ul></nav>
<form action="/search" id="searchform"><input type="search" name="search"><button>Search</button></form></header></div>
<div class="mw-page-container"><main id="content" class="mw-body"><header class="mw-body-header"><h1 id="firstHeading"><span class="mw-page-title-main">Tide</span></h1></header>
<div id="bodyContent"><div id="mw-content-text" class="mw-body-content"><div class="mw-content-ltr mw-parser-output" lang="en" dir="ltr">
<table class="infobox"><tbody>${infobox}</tbody></table>
${body}
<div class="mw-heading mw-heading2"><h2 id="References">References</h2></div>
<div class="reflist"><div class="mw-references-wrap mw-references-columns"><ol class="references">${references}</ol></div></div>
${navbox(1)}${navbox(2)}${navbox(3)}
</div></div></div></main></div>
<footer id="footer" class="mw-footer" role="contentinfo"><ul id="footer-info"><li>This page was last edited on 1 November 2026.</li><li>Text is available under a licence.</li></ul></footer>
</body></html>`;
}
