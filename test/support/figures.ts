/**
 * What a cost figure looks like in prose, for the checks that keep figures in
 * docs/benchmarks.md: the comments of the shipped code (test/unit/docs/comments.test.ts) and the
 * user docs (test/unit/docs/user-docs.test.ts).
 */
/** A time, a size or a share: what a measurement is counted in. */
const UNIT = String.raw`\s?(?:ms|µs|s|seconds?|MiB|KiB|GiB|MB|KB|GB|%)(?!\w)`;
const NUMBER = String.raw`\d[\d.,]*(?:\s?(?:to|–|-)\s?\d[\d.,]*)?`;
/**
 * An estimate or a measurement, in any of the ways one is written: "~4 ms", "about 2 MB",
 * "costs 1.5 ms", "adds 8 ms", "took 3 s", "+2 MiB", "4 ms more", "9 MiB per call", "0.7×".
 * A limit, a default or a constant ("Default 4 MiB", "at most 50 ms", "Multus hard-codes 250 ms")
 * is none of these.
 */
export const FIGURE_RES = [
  /~\s?\d/,
  // Words, not the CNI verbs: "ADD 1.5 s later" names a verb.
  new RegExp(
    String.raw`\b(?:[Aa]bout|[Aa]round|[Rr]oughly|[Cc]osts?|[Ss]aves?|saved|[Tt]akes?|took|` +
      String.raw`[Aa]dds?|added|[Cc]uts?|[Pp]ays?|paid|[Ss]pends?|spent|[Ww]eighs?|[Uu]ses?|used|` +
      String.raw`[Hh]olds?|[Pp]eaks? at)\s+` +
      `${NUMBER}${UNIT}`,
  ),
  new RegExp(String.raw`(?<![\w.])[+−]\s?${NUMBER}${UNIT}`),
  new RegExp(
    String.raw`\b${NUMBER}${UNIT}\s+(?:more|less|faster|slower|extra|per (?:call|pod|request|` +
      String.raw`run|network|ADD|DEL)|a (?:call|pod|request|run)|of (?:CPU|memory|start-up))\b`,
    "i",
  ),
  // A measured ratio has decimals ("0.7×"); "16× later" is a setting.
  /\b\d+\.\d+\s?×/,
];
