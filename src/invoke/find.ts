/** Plugin lookup in CNI_PATH, after libcni `pkg/invoke/find.go` (C4.1, C4.2, B9, B51). */
import { accessSync, constants, statSync, type Stats } from "node:fs";
import { resolve } from "node:path";
import { CniError, Code } from "../cni/errors";
import { validatePluginType } from "../cni/validate";

export async function findInPath(type: string, dirs: readonly string[]): Promise<string> {
  validatePluginType(type, `plugin ${JSON.stringify(type)}`);
  if (dirs.length === 0) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `plugin type=${JSON.stringify(type)} is missing: CNI_PATH is empty and no binDir is ` +
        `configured`,
    );
  }
  const skipped: string[] = [];
  for (const dir of dirs) {
    // Absolute, always: the path found here is the path spawned, never a name resolved through
    // PATH.
    const candidate = resolve(dir, type);
    let st: Stats;
    try {
      st = statSync(candidate);
    } catch {
      continue;
    }
    if (!st.isFile()) {
      skipped.push(`${candidate} is not a regular file`);
      continue;
    }
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      skipped.push(`${candidate} is not executable`);
      continue;
    }
    return candidate;
  }
  const extra = skipped.length ? `; skipped: ${skipped.join(", ")}` : "";
  // Not "not found": containerd (go-cni) treats a DEL error saying "not found" as success (K5,
  // B62), and a missing binary leaves the delegate's state in place.
  throw new CniError(
    Code.InvalidNetworkConfig,
    `plugin type=${JSON.stringify(type)} is missing: no executable of that name in CNI_PATH ` +
      `[${dirs.join(":")}]${extra}`,
  );
}
