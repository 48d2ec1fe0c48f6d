// Web pages shaped like real ones, for the web reader's tests (served on loopback by
// test/peers/web-peers.ts) and its benchmark (bench/web-reader.ts): a news article inside the
// usual chrome (header, mega-menu, breadcrumbs, share bar, ad slots, related stories, comments,
// footer, inline scripts and styles), in three sizes. Plain strings, no Node or vitest imports.

export interface ArticleShape {
  paragraphs: number;
  /** Inline script and JSON state, in kB (news pages carry hundreds). */
  scriptKb: number;
  /** Links in the navigation menu. */
  menuLinks: number;
}

export const PAGE_SHAPES = {
  small: { paragraphs: 8, scriptKb: 20, menuLinks: 20 },
  medium: { paragraphs: 40, scriptKb: 150, menuLinks: 150 },
  large: { paragraphs: 300, scriptKb: 1_200, menuLinks: 400 },
} as const satisfies Record<string, ArticleShape>;

/** Words only the article holds: tests look for them in what the reader returns. */
export const ARTICLE_MARKERS = {
  title: "Why the tide comes in twice a day",
  byline: "Jane Roe",
  firstSentence: "The moon pulls the ocean toward it, and the earth's spin does the rest.",
  link: "https://science.example/gravity",
};

/**
 * Words only the chrome holds: tests check they are gone. The last two sit in blocks with hashed
 * class names (as CSS-in-JS sites write them), so only judging the content can drop them.
 */
export const CHROME_MARKERS = [
  "Subscribe to our newsletter",
  "Sponsored: buy premium boat insurance",
  "Related: ten beaches to visit",
  "All rights reserved",
  "window.__STATE__",
  "Cookie preferences",
  "Most read: harbour closes for winter",
  "Trending: lighthouse keeper retires",
];

const FILLER = [
  "Tides rise and fall on a rhythm set by the moon and, to a lesser degree, the sun.",
  "Coastal towns have kept tide tables for centuries, long before anyone could explain them.",
  "Where the seabed is shallow and the coast funnels the water, the range can reach many metres.",
  "Sailors still plan departures around slack water, when the current briefly stops.",
  "The bulge on the far side of the earth surprises most readers the first time they meet it.",
];

export function articlePage(shape: ArticleShape): string {
  const menu = Array.from(
    { length: shape.menuLinks },
    (_, i) => `<li><a href="/section/${i}">Section ${i}</a></li>`,
  ).join("");
  const paragraphs = Array.from({ length: shape.paragraphs }, (_, i) => {
    const text = `${FILLER[i % FILLER.length]} ${FILLER[(i + 2) % FILLER.length]} ${FILLER[(i + 4) % FILLER.length]}`;
    const extra =
      i % 7 === 3
        ? ` See <a href="/archive/${i}">our archive</a> and <em>the notes</em> on <strong>spring tides</strong>.`
        : "";
    const ad =
      i % 10 === 5 ? `<div class="ad-slot"><p>Sponsored: buy premium boat insurance</p></div>` : "";
    return `<p>${text}${extra}</p>${ad}`;
  }).join("\n");
  const state = JSON.stringify({
    items: Array.from({ length: Math.ceil((shape.scriptKb * 1024) / 64) }, (_, i) => ({
      id: i,
      k: "x".repeat(40),
    })),
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${ARTICLE_MARKERS.title} | Sea News</title>
<meta property="og:site_name" content="Sea News"><meta name="author" content="${ARTICLE_MARKERS.byline}">
<style>body{font-family:serif}.ad-slot{border:1px solid #ccc}.menu li{display:inline}</style>
<script>window.__STATE__ = ${state};</script>
</head><body>
<div class="cookie-banner">Cookie preferences: we use cookies. <button>Accept</button></div>
<header class="site-header"><a href="/" class="logo">Sea News</a>
<nav class="menu"><ul>${menu}</ul></nav></header>
<div class="breadcrumbs"><a href="/">Home</a> › <a href="/science">Science</a></div>
<main><article>
<h1>${ARTICLE_MARKERS.title}</h1>
<p class="byline">By <a href="/authors/jane-roe" rel="author">${ARTICLE_MARKERS.byline}</a>, <time datetime="2026-11-20">20 November 2026</time></p>
<div class="share-bar"><a href="https://social.example/share">Share</a> <a href="mailto:?x">Email</a></div>
<p>${ARTICLE_MARKERS.firstSentence} Read more about <a href="${ARTICLE_MARKERS.link}">gravity</a>.</p>
<h2>Two bulges, one planet</h2>
${paragraphs}
<ul><li>Spring tides: sun and moon in line</li><li>Neap tides: at right angles</li></ul>
</article>
<div class="c-9f2a1"><h3>Most read: harbour closes for winter</h3><ol>${Array.from({ length: 8 }, (_, i) => `<li><a href="/story/${i}">Story number ${i} of the week</a></li>`).join("")}</ol></div>
<div class="k3x"><span>Trending: lighthouse keeper retires</span> <a href="/t/1">Ferries</a> <a href="/t/2">Storms</a> <a href="/t/3">Fishing</a></div>
<aside class="related"><h3>Related: ten beaches to visit</h3><ul><li><a href="/beaches">Beaches</a></li></ul></aside>
<section class="comments"><h3>Comments</h3><p>First!</p></section>
</main>
<div class="newsletter"><p>Subscribe to our newsletter</p><form><input name="email"></form></div>
<footer class="site-footer"><p>© 2026 Sea News. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
<script>document.querySelectorAll('a').forEach(function(a){a.dataset.t=1});</script>
</body></html>`;
}
