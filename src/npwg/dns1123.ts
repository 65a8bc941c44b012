/**
 * N3.3: object names and namespaces are DNS-1123 labels. Checked before a name reaches a URL or a
 * message, so `.`, `..` or `%2e` can never turn into a different request.
 */
import { CniError, Code } from "../cni/errors";

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const MAX_LABEL_LENGTH = 63;

export function dns1123LabelProblem(value: string): string | undefined {
  if (value === "") return "it is empty";
  if (value.length > MAX_LABEL_LENGTH) return `it is longer than ${MAX_LABEL_LENGTH} characters`;
  if (!LABEL.test(value)) return "it must consist of lower-case letters, digits and '-', and start and end with a letter or digit";
  return undefined;
}

/** Throws code 7 naming `what` (e.g. `networks annotation item 2: namespace`) and the value. */
export function validateDns1123Label(value: string, what: string): string {
  const problem = dns1123LabelProblem(value);
  if (problem) throw new CniError(Code.InvalidNetworkConfig, `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid DNS-1123 label: ${problem}`);
  return value;
}
