/**
 * The node's kubeconfig for the plugin (M11). Multus's entrypoint embeds the service-account
 * token, which expires (bound tokens live an hour or so) and leaves every pod failing until the
 * entrypoint notices; here the kubeconfig names a token FILE and a CA file beside it, which the
 * installer copies from the projected service-account volume and refreshes when they rotate. Every
 * write is atomic (temp + fsync + rename), so the plugin reads the old token or the new one, never
 * a torn one (B50).
 */
import { lstatSync } from "node:fs";
import { dirname } from "node:path";
import { writeFileAtomic } from "../store/atomic-file";
import { readSharedFile } from "../store/shared-file";

export { renderKubeconfig } from "./kubeconfig-text";

/** A kubeconfig, a token or a CA bundle is a few KiB; a file far larger is none of them. */
const MAX_NODE_FILE_BYTES = 1024 * 1024;

const NOT_THERE = "it does not exist";

export interface NodeFileOptions {
  follow: boolean;
  maxBytes?: number;
}

export type NodeFileRead = { data: Buffer } | { problem: string };

/**
 * Every file the installer reads goes through the shared-file rules (store/shared-file.ts): never
 * blocking on a FIFO (so SIGTERM is always heard), never opening a device, a size cap before
 * reading. `follow`: the source files Kubernetes mounts (a projected token, a ConfigMap) are
 * symlinks by design; what the installer wrote itself is read without following one.
 */
export function readNodeFile(path: string, opts: NodeFileOptions): NodeFileRead {
  const maxBytes = opts.maxBytes ?? MAX_NODE_FILE_BYTES;
  const file = readSharedFile(path, { maxBytes, followSymlink: opts.follow });
  if (file.state === "found") return { data: file.data };
  return { problem: file.state === "missing" ? NOT_THERE : file.reason };
}

function readOrUndefined(path: string, follow: boolean): Buffer | undefined {
  const read = readNodeFile(path, { follow });
  return "data" in read ? read.data : undefined;
}

/**
 * The directory the installer writes its credentials into (`plexus.d`) must be a directory, not a
 * symlink: a link there would send the token copy wherever it points. Throws naming the dir.
 */
function assertNotSymlinkedDir(dir: string): void {
  let isLink = false;
  try {
    isLink = lstatSync(dir).isSymbolicLink();
  } catch {
    return; // missing: the first write creates it as a directory
  }
  if (isLink)
    throw new Error(
      `${dir} is a symbolic link; the installer writes credentials only into a real directory ` +
        "(remove the link, or point --kubeconfig-file-host elsewhere)",
    );
}

/**
 * Makes `dest` hold `content` (mode 0600), writing only when it differs; returns whether it wrote
 * and whether the file had been there before.
 */
export async function syncFile(
  dest: string,
  content: string | Buffer,
): Promise<"unchanged" | "created" | "updated"> {
  const want = typeof content === "string" ? Buffer.from(content) : content;
  assertNotSymlinkedDir(dirname(dest));
  // What is at the destination is read as input: a FIFO planted there is replaced, not waited on.
  const have = readOrUndefined(dest, false);
  if (have?.equals(want)) return "unchanged";
  await writeFileAtomic(dest, want, 0o600);
  return have === undefined ? "created" : "updated";
}

export interface CredentialSources {
  tokenFile: string;
  caFile: string;
}

/** The token and CA from the projected volume, or the reason they cannot be used. */
export function readCredentials(
  src: CredentialSources,
): { token: Buffer; ca: Buffer } | { missing: string } {
  const token = readSource(src.tokenFile, "service-account token");
  if ("missing" in token) return token;
  const ca = readSource(src.caFile, "service-account CA");
  return "missing" in ca ? ca : { token: token.data, ca: ca.data };
}

function readSource(path: string, what: string): { data: Buffer } | { missing: string } {
  const read = readNodeFile(path, { follow: true });
  if ("data" in read && read.data.length > 0) return read;
  const absent = "data" in read || read.problem === NOT_THERE;
  if (absent) return { missing: `${what} ${path} is missing or empty` };
  return { missing: `${what} ${path} is not usable: ${read.problem}` };
}
