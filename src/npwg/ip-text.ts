/**
 * IP addresses as text, through `node:net` (already loaded for the API client, no parser of our
 * own): what a pod's annotation may ask for and what a delegate reports back. `node:net` takes
 * an address as Go's `net.ParseIP` does (no leading zeros in IPv4, `::ffff:1.2.3.4` allowed);
 * a zone (`fe80::1%eth0`) is for callers to refuse.
 */
import { isIPv4, isIPv6 } from "node:net";

/** Whether `text` is an IPv6 address when it holds a colon, else an IPv4 address. */
export function isIpText(text: string): boolean {
  return text.includes(":") ? isIPv6(text) : isIPv4(text);
}

/**
 * The canonical text of an address (IPv6 compressed and in lower case as RFC 5952 writes it, so
 * `fd00::0005` equals `FD00::5`), or undefined for anything else, a zone included.
 */
export function canonicalIp(text: string): string | undefined {
  if (!text.includes(":")) return isIPv4(text) ? text : undefined;
  if (!isIPv6(text) || text.includes("%")) return undefined;
  // The WHATWG URL parser serialises an IPv6 host in exactly that form.
  return new URL(`http://[${text}]`).hostname.slice(1, -1);
}
