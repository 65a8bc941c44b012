/**
 * Loads the core bundle (everything but the CLI boundary).
 *
 * In the single executable both bundles are SEA assets; from dist/ they are files. Either way the
 * core is compiled through `vm.Script` with `cachedData`: a V8 code cache produced at build time
 * *after* warming the core up, so it holds the lazily compiled functions too (Node's own SEA
 * code cache covers only eagerly compiled top-level code). A rejected cache (another Node build)
 * only costs speed. Under vitest (no bundle) the TypeScript module is imported directly.
 */
import type * as Core from "./core";

declare const PLEXUS_BUNDLED: boolean | undefined;

export const CORE_FILE = "plexus-core.cjs";
export const CORE_CACHE_FILE = "plexus-core.cache";
/** CommonJS wrapper, kept identical in scripts/make-code-cache.cjs so the cache matches. */
export const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) {";
export const WRAP_TAIL = "\n})";

export async function loadCore(): Promise<typeof Core> {
  if (typeof PLEXUS_BUNDLED === "undefined" || !PLEXUS_BUNDLED) return import("./core");
  return loadBundledCore();
}

function loadBundledCore(): typeof Core {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const req = require as NodeJS.Require;
  const vm = req("node:vm") as typeof import("node:vm");
  let source: string;
  let cachedData: Buffer | undefined;
  let filename: string;
  const sea = req("node:sea") as typeof import("node:sea");
  if (sea.isSea()) {
    source = sea.getAsset(CORE_FILE, "utf8");
    filename = `/plexus/${CORE_FILE}`;
    try {
      cachedData = Buffer.from(sea.getRawAsset(CORE_CACHE_FILE));
    } catch {
      cachedData = undefined;
    }
  } else {
    const fs = req("node:fs") as typeof import("node:fs");
    const path = req("node:path") as typeof import("node:path");
    filename = path.join(__dirname, CORE_FILE);
    source = fs.readFileSync(filename, "utf8");
    try {
      cachedData = fs.readFileSync(path.join(__dirname, CORE_CACHE_FILE));
    } catch {
      cachedData = undefined;
    }
  }
  const script = new vm.Script(WRAP_HEAD + source + WRAP_TAIL, { filename, ...(cachedData ? { cachedData } : {}) });
  const mod = { exports: {} as typeof Core };
  (script.runInThisContext() as (...a: unknown[]) => void)(mod.exports, req, mod, filename, "/");
  return mod.exports;
}
