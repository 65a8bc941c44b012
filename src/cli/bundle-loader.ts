/**
 * Loads one of Plexus's extra bundles (the core, the Kubernetes API client) with its V8 code cache.
 *
 * In the single executable the bundles are SEA assets; from dist/ they are files beside the entry
 * script. Either way a bundle is compiled through `vm.Script` with `cachedData`: a code cache made
 * at build time *after* warming the bundle up (scripts/make-code-cache.cjs), so it holds lazily
 * compiled functions too. A rejected cache (another Node build) only costs speed.
 */

/** CommonJS wrapper, kept identical in scripts/make-code-cache.cjs so the cache matches. */
export const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) {";
export const WRAP_TAIL = "\n})";

const loaded = new Map<string, unknown>();

/** `name` without extension: `plexus-core` → plexus-core.cjs and plexus-core.cache. */
export function loadBundle<T>(name: string): T {
  const done = loaded.get(name);
  if (done) return done as T;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const req = require as NodeJS.Require;
  const vm = req("node:vm") as typeof import("node:vm");
  const sea = req("node:sea") as typeof import("node:sea");
  let source: string;
  let cachedData: Buffer | undefined;
  let filename: string;
  if (sea.isSea()) {
    source = sea.getAsset(`${name}.cjs`, "utf8");
    filename = `/plexus/${name}.cjs`;
    try {
      cachedData = Buffer.from(sea.getRawAsset(`${name}.cache`));
    } catch {
      cachedData = undefined;
    }
  } else {
    const fs = req("node:fs") as typeof import("node:fs");
    const path = req("node:path") as typeof import("node:path");
    const dir = req.main?.filename ? path.dirname(req.main.filename) : __dirname;
    filename = path.join(dir, `${name}.cjs`);
    source = fs.readFileSync(filename, "utf8");
    try {
      cachedData = fs.readFileSync(path.join(dir, `${name}.cache`));
    } catch {
      cachedData = undefined;
    }
  }
  const script = new vm.Script(WRAP_HEAD + source + WRAP_TAIL, { filename, ...(cachedData ? { cachedData } : {}) });
  const mod = { exports: {} as T };
  (script.runInThisContext() as (...a: unknown[]) => void)(mod.exports, req, mod, filename, "/");
  loaded.set(name, mod.exports);
  return mod.exports;
}
