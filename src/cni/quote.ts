/**
 * B98: text from outside (NAD names, types and values, annotation values, CNI_ARGS, a delegate's
 * error text) as a person's terminal may show it. JSON.stringify escapes only the controls below
 * U+0020: one of U+0080–U+009F (U+009B is CSI to a terminal, U+009D is OSC), U+2028/2029 or a
 * bidi control would reach the screen raw, move the cursor, rewrite the title or reorder what the
 * admin reads. Every text output (the admin commands, the pretty log, Event messages) passes
 * through this one escape.
 */

/**
 * The control characters (U+0000–U+001F, DEL, U+0080–U+009F), the line and paragraph separators
 * and the bidi controls (ALM, LRM, RLM, LRE/RLE/PDF/LRO/RLO, LRI/RLI/FSI/PDI).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

function escapeChar(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * `text` with every unsafe character written as a `\u00XX`-style escape, newlines and tabs
 * included: for a value set into one line of text. Printable text (é, 日本, →) is left as it is.
 */
export function escapeText(text: string): string {
  return text.replace(UNSAFE, escapeChar);
}

/**
 * Text of several lines (a command's whole output): each line escaped as {@link escapeText} does,
 * the newlines between them kept.
 */
export function escapeLines(text: string): string {
  return text.split("\n").map(escapeText).join("\n");
}

/**
 * A value quoted for a message, as JSON.stringify quotes it (`"net-a"`), with the characters it
 * leaves raw escaped too. Stays valid JSON: the escapes are JSON's own.
 */
export function quote(value: unknown): string {
  return escapeText(JSON.stringify(value) ?? String(value));
}
