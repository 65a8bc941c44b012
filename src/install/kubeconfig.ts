/**
 * The node's kubeconfig for the plugin (M11). Multus's entrypoint embeds the service-account
 * token, which expires (bound tokens live an hour or so) and leaves every pod failing until the
 * entrypoint notices; here the kubeconfig names a token FILE and a CA file beside it, which the
 * installer copies from the projected service-account volume and refreshes when they rotate. Every
 * write is atomic (temp + fsync + rename), so the plugin reads the old token or the new one, never
 * a torn one (B50).
 */
import { readFileSync } from "node:fs";
import { writeFileAtomic } from "../store/atomic-file";

export { type KubeconfigInput, renderKubeconfig } from "./kubeconfig-text";

function readOrUndefined(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Makes `dest` hold `content` (mode 0600), writing only when it differs; returns whether it wrote
 * and whether the file had been there before.
 */
export async function syncFile(dest: string, content: string | Buffer): Promise<"unchanged" | "created" | "updated"> {
  const want = typeof content === "string" ? Buffer.from(content) : content;
  const have = readOrUndefined(dest);
  if (have?.equals(want)) return "unchanged";
  await writeFileAtomic(dest, want, 0o600);
  return have === undefined ? "created" : "updated";
}

export interface CredentialSources {
  tokenFile: string;
  caFile: string;
}

/** The token and CA from the projected volume, or the reason they cannot be used. */
export function readCredentials(src: CredentialSources): { token: Buffer; ca: Buffer } | { missing: string } {
  const token = readOrUndefined(src.tokenFile);
  if (!token || token.length === 0) return { missing: `service-account token ${src.tokenFile} is missing or empty` };
  const ca = readOrUndefined(src.caFile);
  if (!ca || ca.length === 0) return { missing: `service-account CA ${src.caFile} is missing or empty` };
  return { token, ca };
}
