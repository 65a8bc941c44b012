// Produces dist/plexus-core.cache: a V8 code cache for dist/plexus-core.cjs made after running the
// core's warm-up, so lazily compiled functions are in it. Must run on the Node that the single
// executable embeds (the pinned Node 24), or V8 rejects the cache at run time (harmless, slower).
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) {";
const WRAP_TAIL = "\n})";
const [src = "dist/plexus-core.cjs", out = "dist/plexus-core.cache"] = process.argv.slice(2);

(async () => {
  const source = fs.readFileSync(src, "utf8");
  const script = new vm.Script(WRAP_HEAD + source + WRAP_TAIL, { filename: path.resolve(src) });
  const mod = { exports: {} };
  script.runInThisContext()(mod.exports, require, mod, path.resolve(src), path.dirname(path.resolve(src)));
  // A bundle with a warm-up runs it, so the per-pod paths land compiled in the cache.
  if (typeof mod.exports.warmUp === "function") await mod.exports.warmUp();
  const data = script.createCachedData();
  const tmp = `${out}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, data);
  fs.renameSync(tmp, out);
  process.stderr.write(`code cache: ${out} ${(data.length / 1024).toFixed(0)} KiB\n`);
})().catch((err) => {
  process.stderr.write(`make-code-cache: ${err.stack ?? err}\n`);
  process.exit(1);
});
