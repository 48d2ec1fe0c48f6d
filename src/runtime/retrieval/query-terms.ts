// The content words of a question: lowercased, de-duplicated, without English function words.
// Full-text search builds its query from them, and a turn whose message has none ("hi",
// "thanks!") skips retrieval altogether, so it costs no embedding call.

// Common English function words: matching them ranks by noise and costs time on large indexes.
const STOPWORDS = new Set(
  (
    "a about above after again against all am an and any are as at be because been before being below between both but by " +
    "can could did do does doing down during each few for from further had has have having he her here hers herself him " +
    "himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or other " +
    "our ours ourselves out over own same she should so some such than that the their theirs them themselves then there " +
    "these they this those through to too under until up very was we were what when where which while who whom why will " +
    "with would you your yours yourself yourselves also ever got get gets like really one thing things ok okay yes yeah " +
    "hi hello hey thanks thank please sure cool great cannot ought whose lot lots much many might must shall us via let " +
    "lets dont doesnt didnt isnt arent wasnt werent cant couldnt wouldnt shouldnt wont hasnt havent hadnt"
  ).split(" "),
);

export function isStopword(word: string): boolean {
  return STOPWORDS.has(word);
}

/** Every content word of the text, in order, repeats included. */
export function contentWords(text: string): string[] {
  const words = text
    .normalize("NFKC")
    .toLowerCase()
    .match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu);
  if (!words) return [];
  return words
    .map((raw) => raw.replace(/['’].*$/, ""))
    .filter((word) => word.length > 1 && !STOPWORDS.has(word));
}

/** At most `max` distinct content words, in order of appearance. */
export function queryTerms(text: string, max = 24): string[] {
  return [...new Set(contentWords(text))].slice(0, max);
}
