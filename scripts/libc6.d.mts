/** Types of scripts/libc6.mjs for the tests of the glibc pin. */
export function readLibc6Pin(file?: string): string;
export function checkLibc6Pin(o: {
  found: string;
  arch: string;
  file?: string;
  update?: boolean;
}): string;
export function packagedLibc6(o: { arch: string; triplet: string; deb: string; scratch: string }): {
  version: string;
  find(name: string): string;
  copyright: string;
};
