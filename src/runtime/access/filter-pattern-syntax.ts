// Why a filter pattern is refused, in the operator's terms. Patterns are RE2 (message-filter.ts):
// what someone used to JavaScript or PCRE writes instead (a lookaround, a backreference, a regex
// literal with slashes and flags) is refused naming what RE2 lacks or what to write, rather than
// with RE2's parser error ("invalid named capture" for a lookbehind) or, for a literal, silently
// kept as a pattern that looks for the slashes.
import { RE2JS, RE2JSSyntaxException } from "re2js";

/**
 * What RE2 leaves out on purpose (it is what keeps matching linear in the message), told by the
 * fragment the parser stopped at (its `input`): RE2 reads `(?<!…)` as a malformed named group.
 */
const UNSUPPORTED: readonly (readonly [RegExp, string])[] = [
  [/^\(\?<[=!]/, "lookbehind ((?<=…), (?<!…)) is not supported"],
  [/^\(\?[=!]/, "lookahead ((?=…), (?!…)) is not supported"],
  [/^\\(?:[1-9]|k)/, "backreferences (\\1, \\k<name>) are not supported"],
];
const WHY_UNSUPPORTED =
  "patterns are RE2 syntax, which has no lookaround or backreferences so that a message is " +
  "checked in time linear in its length";

/** Why RE2 cannot compile the pattern; null when it can. */
export function patternSyntaxError(source: string): string | null {
  try {
    RE2JS.compile(source);
    return null;
  } catch (error) {
    if (error instanceof RE2JSSyntaxException && error.input !== null) {
      const input = error.input;
      const unsupported = UNSUPPORTED.find(([construct]) => construct.test(input));
      if (unsupported) return `${unsupported[1]}: ${WHY_UNSUPPORTED}`;
    }
    return error instanceof Error ? error.message : "not a pattern";
  }
}

/** `/body/flags` with JavaScript's flags: how a regex literal is written in JavaScript. */
const REGEX_LITERAL = /^\/(.+)\/([dgimsuvy]*)$/s;

/**
 * Why a pattern written like a JavaScript regex literal ("/casino/i") is refused, with what to
 * write instead; null for any other pattern. RE2 would read the slashes and flags as text to find,
 * so the pattern would never match what was meant. It is refused rather than rewritten: a pattern
 * that really looks for slashes ("/invite/") means what it says in RE2, and a saved one keeps
 * meaning it. Flags: `i` is always on, `m` and `s` become RE2's inline `(?m)` and `(?s)`, and
 * `g`, `y`, `d`, `u`, `v` change nothing when a message is only tested.
 */
export function regexLiteralError(source: string): string | null {
  const literal = REGEX_LITERAL.exec(source);
  if (!literal) return null;
  const body = literal[1]!;
  const flags = literal[2] ?? "";
  const inline = [..."ms"].filter((flag) => flags.includes(flag)).join("");
  const meant = inline ? `(?${inline})${body}` : body;
  const asText = flags ? "the slashes and flags" : "the slashes";
  return (
    `written like a JavaScript regex literal, which would look for ${asText} as text: a ` +
    `pattern is RE2 syntax with no slashes or flags, always case-insensitive, so write ` +
    `"${meant}" (to look for the slashes themselves, write "[/]${body}[/]${flags}")`
  );
}
