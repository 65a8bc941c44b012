/**
 * N3.3: object names and namespaces are DNS-1123 labels. Checked before a name reaches a URL or a
 * message, so `.`, `..` or `%2e` can never turn into a different request (B20).
 */
import { showValue as show } from "../cni/json";
import { CniError, Code } from "../cni/errors";

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const MAX_LABEL_LENGTH = 63;

/** Why `value` is not a DNS-1123 label, or undefined when it is one. */
export function dns1123LabelProblem(value: string): string | undefined {
  if (typeof value !== "string")
    return `it is a ${value === null ? "null" : typeof value}, not a string`;
  if (value === "") return "it is empty";
  if (value.length > MAX_LABEL_LENGTH)
    return `it is ${value.length} characters long, more than ${MAX_LABEL_LENGTH}`;
  if (!LABEL.test(value))
    return (
      "it must consist of lower-case letters, digits and '-', and start and end with a " +
      "letter or digit"
    );
  return undefined;
}

/** Throws code 7 naming `what` (e.g. `pod namespace`) and the value; returns the value. */
export function validateDns1123Label(value: string, what: string): string {
  const problem = dns1123LabelProblem(value);
  if (problem) {
    const shown = typeof value === "string" ? show(value) : String(value);
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what} ${shown} is not a valid DNS-1123 label: ${problem}`,
    );
  }
  return value;
}
