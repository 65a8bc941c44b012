// `npm run build:release`: the release executables, cross-compiled by the pinned Bun from the
// bundle dist/plexus.cjs with the flags of dist/plexus (scripts/build-flags.mjs), into
// dist/release/:
//   plexus-linux-amd64           x86-64 (Bun's default x64 runtime)
//   plexus-linux-amd64-baseline  x86-64 CPUs without AVX2 (Bun's baseline runtime: Nehalem and up)
//   plexus-linux-arm64           aarch64
//   <each>.cdx.json              its CycloneDX SBOM: the bundled npm packages and the Bun runtime
//   SHA256SUMS                   `sha256sum -c SHA256SUMS` in that directory checks them all
// The build is reproducible: one commit gives the same bytes wherever and whenever it is built
// (no PID, time or checkout path lands in a file; test/e2e/reproducible.test.ts builds twice), so
// SHA256SUMS vouches for the source: anyone can rebuild the commit and compare.
// Bun embeds the bundle into the runtime of the target (`--compile-executable-path`): the runtimes
// are the npm packages @oven/bun-linux-* at the pinned Bun version. npm installs only the host's
// (the others' `cpu` differs), so each is fetched with `npm pack` from the npm registry into
// .cache/bun-runtimes/ and its tarball checked against the integrity in package-lock.json, or for
// the baseline runtime (which the bun package does not list, so the lock does not hold it) against
// the one pinned below. A cached tarball is re-checked on every build; nothing else is downloaded.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileArgs } from "./build-flags.mjs";
import { bunPath } from "./bun-path.mjs";
import { buildInfo } from "./build-info.mjs";
import { recordLayout } from "./bytecode-order.mjs";
import { baseSbom, bunRuntimeComponent, plexusComponent, SBOM_SUFFIX, sealSbom } from "./sbom.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
export const RELEASE_DIR = join(root, "dist/release");
export const RUNTIME_CACHE = join(root, ".cache/bun-runtimes");

/**
 * One release executable: its file name, the Bun runtime package it is built on, Bun's --target.
 */
export const TARGETS = [
  {
    file: "plexus-linux-amd64",
    arch: "amd64",
    pkg: "@oven/bun-linux-x64",
    target: "bun-linux-x64",
  },
  {
    file: "plexus-linux-amd64-baseline",
    arch: "amd64",
    pkg: "@oven/bun-linux-x64-baseline",
    target: "bun-linux-x64-baseline",
  },
  {
    file: "plexus-linux-arm64",
    arch: "arm64",
    pkg: "@oven/bun-linux-aarch64",
    target: "bun-linux-arm64",
  },
];

/**
 * Integrity (npm's `dist.integrity`) of runtime packages that package-lock.json does not hold. When
 * the pinned Bun changes, add the new version's line from
 * `npm view @oven/bun-linux-x64-baseline@<version> dist.integrity` (and review the change).
 */
const PINNED_INTEGRITY = {
  "@oven/bun-linux-x64-baseline@1.4.5":
    "sha512-s8yMwYcFnnrA178gji0gZbkE2WVDej/Ti1x770oPfihxyRxSMNhGhiAQNXV53aDeraZxksdvKV/RAdQBCd0qPA==",
};

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

/** The Bun version package.json pins (the devDependency "bun", an exact version). */
export function pinnedBunVersion() {
  const version = readJson(join(root, "package.json")).devDependencies.bun;
  if (!/^\d+\.\d+\.\d+$/.test(version))
    throw new Error(`package.json pins bun to ${version}: an exact version is needed`);
  return version;
}

function expectedIntegrity(pkg, version) {
  const locked = readJson(join(root, "package-lock.json")).packages?.[`node_modules/${pkg}`];
  if (locked?.version === version && locked.integrity) return locked.integrity;
  const pinned = PINNED_INTEGRITY[`${pkg}@${version}`];
  if (pinned) return pinned;
  throw new Error(
    `no known integrity for ${pkg}@${version}: package-lock.json does not hold it and ` +
      `scripts/build-release.mjs pins none ` +
      `(add the output of \`npm view ${pkg}@${version} dist.integrity\` to PINNED_INTEGRITY)`,
  );
}

function integrityOf(path) {
  return `sha512-${createHash("sha512").update(readFileSync(path)).digest("base64")}`;
}

/** Where the runtime of `target` is unpacked (its `bin/bun`). */
export function runtimePath(target, version = pinnedBunVersion()) {
  return join(RUNTIME_CACHE, `${target.pkg.replace("@oven/", "")}-${version}`, "bun");
}

/** The runtime of `target` from the npm registry (or the cache), integrity checked. */
function fetchRuntime(target, version) {
  const want = expectedIntegrity(target.pkg, version);
  const tgz = join(RUNTIME_CACHE, `oven-${target.pkg.replace("@oven/", "")}-${version}.tgz`);
  const bin = runtimePath(target, version);
  const stamp = `${bin}.integrity`;
  mkdirSync(RUNTIME_CACHE, { recursive: true });
  if (!existsSync(tgz) || integrityOf(tgz) !== want) {
    rmSync(tgz, { force: true });
    execFileSync(
      "npm",
      ["pack", `${target.pkg}@${version}`, "--pack-destination", RUNTIME_CACHE, "--silent"],
      {
        cwd: root,
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    const got = integrityOf(tgz);
    if (got !== want) {
      rmSync(tgz, { force: true });
      throw new Error(
        `${target.pkg}@${version} from the registry has integrity ${got}, expected ${want}: ` +
          `refusing it`,
      );
    }
  }
  if (!existsSync(bin) || !existsSync(stamp) || readFileSync(stamp, "utf8") !== want) {
    const dir = join(RUNTIME_CACHE, `.unpack-${process.pid}`);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    try {
      execFileSync("tar", ["-xzf", tgz, "-C", dir, "package/bin/bun"]);
      mkdirSync(join(bin, ".."), { recursive: true });
      renameSync(join(dir, "package/bin/bun"), bin);
      writeFileSync(stamp, want);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return bin;
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

function compile(bun, releaseTarget, runtime, order) {
  const out = join(RELEASE_DIR, releaseTarget.file);
  // The executable embeds its outfile's base name (its Bun.main): compiled under the final name in
  // a per-process directory, then renamed, so no build's PID lands in the bytes.
  const scratch = join(RELEASE_DIR, `.build-${process.pid}`);
  const tmp = join(scratch, releaseTarget.file);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch);
  try {
    execFileSync(
      bun,
      compileArgs({
        entry: "dist/plexus.cjs",
        outfile: tmp,
        target: releaseTarget.target,
        runtime,
        order,
      }),
      {
        cwd: root,
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    renameSync(tmp, out);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return out;
}

/** Writes the SBOM of the executable `t` beside it; returns its file name. */
function writeSbom({ t, info, bunVersion }) {
  const file = join(RELEASE_DIR, t.file);
  const runtime = bunRuntimeComponent({
    pkg: t.pkg,
    version: bunVersion,
    integrity: expectedIntegrity(t.pkg, bunVersion),
  });
  const subject = plexusComponent({
    info,
    name: t.file,
    type: "application",
    hashes: [{ alg: "SHA-256", content: sha256(file) }],
  });
  const name = `${t.file}${SBOM_SUFFIX}`;
  writeFileSync(join(RELEASE_DIR, name), sealSbom(baseSbom({ info, subject, extra: [runtime] })));
  return name;
}

export async function buildRelease() {
  const bun = bunPath();
  const version = pinnedBunVersion();
  if (!existsSync(join(root, "dist/plexus.cjs")))
    throw new Error("dist/plexus.cjs is missing: run `node esbuild.config.mjs`");
  mkdirSync(RELEASE_DIR, { recursive: true });
  // A build that fails half-way leaves no SHA256SUMS that would vouch for a mix of old and new
  // files; every runtime is fetched and checked before anything is compiled.
  rmSync(join(RELEASE_DIR, "SHA256SUMS"), { force: true });
  const runtimes = TARGETS.map((t) => fetchRuntime(t, version));
  // The layout recorded on the host's executable: the bytecode is the same on every target.
  const order = await recordLayout({ bun, entry: join(root, "dist/plexus.cjs") });
  const info = buildInfo();
  const sums = [];
  TARGETS.forEach((t, i) => {
    const started = Date.now();
    const out = compile(bun, t, runtimes[i], order);
    sums.push(`${sha256(out)}  ${t.file}\n`);
    const sbom = writeSbom({ t, info, bunVersion: version });
    sums.push(`${sha256(join(RELEASE_DIR, sbom))}  ${sbom}\n`);
    const mib = (statSync(out).size / 2 ** 20).toFixed(1);
    process.stderr.write(
      `build-release: dist/release/${t.file} (${t.target}, Bun ${version}, ${mib} MiB, ` +
        `${Date.now() - started} ms)\n`,
    );
  });
  const sumsTmp = join(RELEASE_DIR, `.SHA256SUMS.${process.pid}.tmp`);
  writeFileSync(sumsTmp, sums.join(""));
  renameSync(sumsTmp, join(RELEASE_DIR, "SHA256SUMS"));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    await buildRelease();
  } catch (err) {
    process.stderr.write(`build-release: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
