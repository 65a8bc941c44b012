/**
 * IP addresses as text: what a pod's annotation may ask for and what a delegate reports back,
 * taken as Go's `net.ParseIP` takes them (no leading zeros in IPv4, `::ffff:1.2.3.4` allowed, no
 * zone). IPv6 goes through the WHATWG URL parser (the runtime's own, spec'd), IPv4 through one
 * regular expression: neither loads a module (`node:net` would bring Node's streams into every
 * ADD). Both agree with `node:net`'s isIPv4/isIPv6 on the
 * unit tests' cases, but for zones, which Plexus refuses.
 */
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** What an IPv6 address may hold; the URL parser would also skip tabs, newlines and spaces. */
const IPV6_CHARS = /^[0-9A-Fa-f:.]+$/;

/** The address in canonical text (IPv6 compressed and in lower case, RFC 5952), else undefined. */
function parseV6(text: string): string | undefined {
  if (!IPV6_CHARS.test(text)) return undefined;
  try {
    // The URL parser serialises an IPv6 host in exactly that form, in brackets.
    return new URL(`http://[${text}]`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** Whether `text` is an IPv6 address when it holds a colon, else an IPv4 address. */
export function isIpText(text: string): boolean {
  return text.includes(":") ? parseV6(text) !== undefined : IPV4.test(text);
}

/**
 * The canonical text of an address (so `fd00::0005` equals `FD00::5`), or undefined for anything
 * else, a zone included.
 */
export function canonicalIp(text: string): string | undefined {
  if (!text.includes(":")) return IPV4.test(text) ? text : undefined;
  return parseV6(text);
}
