// The pages bench/web-reader.ts runs through read_url's whole path to show its bounds: the audit's
// worst pages (security issue 38, hole 5), the costliest shapes within the limits, and big
// real-world pages that must still read. Shared by the bench's client and its worker.
import {
  deepChains,
  emphasizedParagraph,
  encyclopediaArticle,
  flatParagraphs,
  nestedDivs,
} from "../../test/peers/web-attack-pages.ts";
import { articlePage, PAGE_SHAPES } from "../../test/peers/web-pages.ts";
import { MAX_PAGE_DEPTH, MAX_PAGE_ELEMENTS } from "../../src/plugins/web/page-shape.ts";

const DEPTH = MAX_PAGE_DEPTH;
const ELEMENTS = MAX_PAGE_ELEMENTS;

export const BOUNDS_PAGES: Record<string, () => string> = {
  "audit: 2,000 nested divs": () => nestedDivs(2_000),
  "audit: 1.8 MB of flat paragraphs": () => flatParagraphs(46_000),
  "audit: nested 10,000 deep": () => nestedDivs(10_000),
  // The costliest shapes just within the limits (a page's frame adds 4 elements and 2 levels).
  "limit: nested divs at the depth limit": () => nestedDivs(DEPTH - 2),
  "limit: flat paragraphs": () => flatParagraphs(ELEMENTS - 4),
  "limit: chains of text at the depth limit": () => deepChains(ELEMENTS, DEPTH - 2),
  "limit: one paragraph of emphasis": () => emphasizedParagraph(ELEMENTS - 7),
  "real: encyclopedia article": () => encyclopediaArticle(),
  "real: news page (large)": () => articlePage(PAGE_SHAPES.large),
  "real: news page (medium)": () => articlePage(PAGE_SHAPES.medium),
};
