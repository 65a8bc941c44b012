/**
 * Where a JSON text stops being JSON, and what was expected there, without a piece of the text:
 * the engines' own messages quote it (V8: `Unexpected token 'h', "hello secret" is not valid
 * JSON`; JSC: `Unexpected identifier "hello"`), and a config symlinked to a secret file would put
 * the secret into a pod's events and the logs. Only run after JSON.parse failed, so its cost is
 * never paid by a good document. Iterative (an explicit stack), so deep input cannot overflow.
 */

type State = "value" | "value-or-end" | "key" | "key-or-end" | "colon" | "after";

interface Scan {
  text: string;
  pos: number;
  stack: string[];
  state: State;
}

/** Thrown inside the scan: the offset and what was expected there. */
class Stop {
  constructor(
    readonly pos: number,
    readonly expected: string,
  ) {}
}

/** `at line 3, column 7: expected ',' or '}' after a property value, found a letter`. */
export function describeJsonSyntaxError(text: string): string {
  const s: Scan = { text, pos: 0, stack: [], state: "value" };
  try {
    for (;;) {
      skipSpace(s);
      if (s.state === "after" && s.stack.length === 0) {
        if (s.pos >= text.length) return "(the engine refused it; no position known)";
        throw new Stop(s.pos, "the end of the document after its value");
      }
      step(s);
    }
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    return `at ${position(text, err.pos)}: expected ${err.expected}, found ${found(text, err.pos)}`;
  }
}

function step(scan: Scan): void {
  const c = scan.text[scan.pos];
  if (c === undefined)
    throw new Stop(scan.pos, expectedIn(scan.state, scan.stack[scan.stack.length - 1]));
  if (scan.state === "value" || scan.state === "value-or-end") {
    if (c === "]" && scan.state === "value-or-end") return close(scan);
    return scanValue(scan, c);
  }
  if (scan.state === "key" || scan.state === "key-or-end") {
    if (c === "}" && scan.state === "key-or-end") return close(scan);
    if (c !== '"') throw new Stop(scan.pos, expectedIn(scan.state));
    scanString(scan);
    scan.state = "colon";
    return;
  }
  if (scan.state === "colon") {
    if (c !== ":") throw new Stop(scan.pos, expectedIn(scan.state));
    scan.pos++;
    scan.state = "value";
    return;
  }
  const top = scan.stack[scan.stack.length - 1];
  if (c === ",") {
    scan.pos++;
    scan.state = top === "{" ? "key" : "value";
  } else if ((c === "}" && top === "{") || (c === "]" && top === "[")) close(scan);
  else throw new Stop(scan.pos, expectedIn("after", top));
}

function expectedIn(state: State, top?: string): string {
  switch (state) {
    case "value":
      return "a value";
    case "value-or-end":
      return "a value or ']'";
    case "key":
      return "a property name in double quotes";
    case "key-or-end":
      return "a property name in double quotes or '}'";
    case "colon":
      return "':' after a property name";
    default:
      return top === "{" ? "',' or '}' after a property value" : "',' or ']' after an element";
  }
}

function close(scan: Scan): void {
  scan.stack.pop();
  scan.pos++;
  scan.state = "after";
}

const ANY_VALUE = "a value (an object, array, string, number, true, false or null)";
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

function scanValue(scan: Scan, char: string): void {
  if (char === "{" || char === "[") {
    scan.stack.push(char);
    scan.pos++;
    scan.state = char === "{" ? "key-or-end" : "value-or-end";
    return;
  }
  scan.state = "after";
  if (char === '"') return scanString(scan);
  for (const word of ["true", "false", "null"])
    if (scan.text.startsWith(word, scan.pos)) {
      scan.pos += word.length;
      return;
    }
  NUMBER.lastIndex = scan.pos;
  if (!NUMBER.test(scan.text)) throw new Stop(scan.pos, ANY_VALUE);
  scan.pos = NUMBER.lastIndex;
}

function scanString(scan: Scan): void {
  let i = scan.pos + 1;
  for (;;) {
    const c = scan.text.charCodeAt(i);
    if (Number.isNaN(c)) throw new Stop(i, "the closing '\"' of a string");
    if (c === 0x22) break;
    if (c < 0x20) throw new Stop(i, "no control character inside a string (escape it)");
    if (c === 0x5c) {
      const e = scan.text[i + 1];
      if (e === "u" && /^[0-9a-fA-F]{4}$/.test(scan.text.slice(i + 2, i + 6))) i += 6;
      else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
      else throw new Stop(i + 1, 'an escape (one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)');
    } else i++;
  }
  scan.pos = i + 1;
}

function skipSpace(scan: Scan): void {
  while (scan.pos < scan.text.length && " \t\n\r".includes(scan.text[scan.pos]!)) scan.pos++;
}

function position(text: string, pos: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < pos; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return `line ${line}, column ${pos - start + 1}`;
}

/** What kind of character is at `pos`: a class, never the character itself. */
function found(text: string, pos: number): string {
  const c = text[pos];
  if (c === undefined) return "the end of the input";
  if (/[A-Za-z]/.test(c)) return "a letter";
  if (/[0-9]/.test(c)) return "a digit";
  if (c.charCodeAt(0) < 0x20) return "a control character";
  if (/[{}[\]:,"]/.test(c)) return `'${c}'`;
  return "another character";
}

/**
 * A YAML parser's error (js-yaml's YAMLException) as the position and, when it is only words, its
 * reason: its message shows the offending lines, and some reasons quote the input (a tag name).
 */
export function describeYamlError(err: unknown): string {
  const e = err as { reason?: unknown; mark?: { line?: unknown; column?: unknown } };
  const at =
    typeof e.mark?.line === "number" && typeof e.mark.column === "number"
      ? `at line ${e.mark.line + 1}, column ${e.mark.column + 1}`
      : "(no position known)";
  const words = typeof e.reason === "string" && /^[A-Za-z ,-]+$/.test(e.reason);
  return words ? `${at}: ${e.reason}` : at;
}
