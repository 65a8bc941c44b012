/** Plugin lookup in CNI_PATH, after libcni `pkg/invoke/find.go` (C4.1, C4.2, B9, B51). */
import { constants, type Stats } from "node:fs";
import { access, stat } from "node:fs/promises";
import { join } from "node:path";
import { CniError, Code } from "../cni/errors";
import { validatePluginType } from "../cni/validate";

export async function findInPath(type: string, dirs: readonly string[]): Promise<string> {
  validatePluginType(type, `plugin ${JSON.stringify(type)}`);
  if (dirs.length === 0) {
    throw new CniError(Code.InvalidNetworkConfig, `plugin type=${JSON.stringify(type)} not found: CNI_PATH is empty and no binDir is configured`);
  }
  const skipped: string[] = [];
  for (const dir of dirs) {
    const candidate = join(dir, type);
    let st: Stats;
    try {
      st = await stat(candidate);
    } catch {
      continue;
    }
    if (!st.isFile()) {
      skipped.push(`${candidate} is not a regular file`);
      continue;
    }
    try {
      await access(candidate, constants.X_OK);
    } catch {
      skipped.push(`${candidate} is not executable`);
      continue;
    }
    return candidate;
  }
  const extra = skipped.length ? `; skipped: ${skipped.join(", ")}` : "";
  throw new CniError(Code.InvalidNetworkConfig, `plugin type=${JSON.stringify(type)} not found in CNI_PATH [${dirs.join(":")}]${extra}`);
}
