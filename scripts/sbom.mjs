// CycloneDX SBOMs for the release executables (scripts/build-release.mjs) and the images
// (scripts/image.mjs). The npm packages come from `npm sbom --package-lock-only --omit dev`
// (what package-lock.json pins, with npm's hashes and licenses), kept to those esbuild bundled (the
// bundle's inputs, dist/plexus.cjs.inputs.json); the Bun runtime each executable embeds is added
// with the integrity the build checked it against. The document is reproducible: its time is the
// commit's, its serial number is derived from its content, and nothing names the build machine.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
export const SBOM_SUFFIX = ".cdx.json";
const DESCRIPTION = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).description;

/** `npm sbom` over the production dependencies that package-lock.json pins. */
function npmSbom() {
  const args = ["sbom", "--sbom-format", "cyclonedx", "--omit", "dev", "--package-lock-only"];
  const out = execFileSync("npm", args, {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    maxBuffer: 64 * 2 ** 20,
  });
  return JSON.parse(out);
}

/** The inputs of both bundles the executable embeds (esbuild.config.mjs). */
const BUNDLE_INPUTS = ["dist/plexus.cjs.inputs.json", "dist/plexus-commands.cjs.inputs.json"];

/** `name@version` of every npm package a file of the bundles came from. */
function bundledPackages(inputs = BUNDLE_INPUTS.map((f) => join(root, f))) {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")).packages ?? {};
  const refs = new Set();
  const files = new Set(inputs.flatMap((f) => JSON.parse(readFileSync(f, "utf8"))));
  for (const file of files) {
    const at = file.indexOf("node_modules/");
    if (at < 0) continue;
    // The lock's key for the package: every node_modules/<name> step up to the file's own package.
    const m = /^((?:node_modules\/(?:@[^/]+\/)?[^/]+\/?)+)/.exec(file.slice(at));
    const path = m?.[1].replace(/\/$/, "");
    const entry = path && lock[path];
    if (!entry?.version) throw new Error(`${file}: bundled, but package-lock.json has no ${path}`);
    refs.add(`${path.replace(/^.*node_modules\//, "")}@${entry.version}`);
  }
  return refs;
}

/** A UUID (RFC 4122 form, version 5 bits) from a SHA-256, so equal content gets an equal serial. */
function uuidFrom(text) {
  const h = createHash("sha256").update(text).digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** The text of `doc` with a serial number made from the rest of it. */
export function sealSbom(doc) {
  const { serialNumber: _drop, ...rest } = doc;
  const serialNumber = `urn:uuid:${uuidFrom(JSON.stringify(rest))}`;
  return `${JSON.stringify({ ...rest, serialNumber }, null, 2)}\n`;
}

const iso = (seconds) => new Date(seconds * 1000).toISOString().replace(/\.000Z$/, "Z");

/**
 * The base of every Plexus SBOM: the bundled npm packages and the dependency graph among them,
 * the metadata component being `subject` (what the SBOM describes). `npm` (what `npm sbom` says)
 * and `keep` (the bundled packages) are read from the checkout unless given.
 */
export function baseSbom({ info, subject, extra = [], npm = npmSbom(), keep = bundledPackages() }) {
  const components = npm.components.filter((c) => keep.has(c["bom-ref"]));
  const refs = new Set(components.map((c) => c["bom-ref"]));
  const top = npm.metadata.component["bom-ref"];
  const dependencies = npm.dependencies
    .filter((d) => refs.has(d.ref) || d.ref === top)
    .map((d) => ({
      ref: d.ref === top ? subject["bom-ref"] : d.ref,
      dependsOn: [
        ...(d.dependsOn ?? []).filter((r) => refs.has(r)),
        ...(d.ref === top ? extra.map((e) => e["bom-ref"]) : []),
      ],
    }));
  return {
    $schema: npm.$schema,
    bomFormat: "CycloneDX",
    specVersion: npm.specVersion,
    version: 1,
    metadata: {
      timestamp: iso(info.time),
      lifecycles: [{ phase: "build" }],
      tools: npm.metadata.tools,
      component: subject,
    },
    components: [...components, ...extra],
    dependencies,
  };
}

/** The metadata component for Plexus built as `name` (a file or an image). */
export function plexusComponent({ info, name, type, hashes = [] }) {
  const comment = `commit ${info.commit}`;
  return {
    "bom-ref": `${name}@${info.version}`,
    type,
    name,
    version: info.version,
    description: DESCRIPTION,
    licenses: [{ license: { id: "Apache-2.0" } }],
    hashes,
    externalReferences: info.source ? [{ type: "vcs", url: info.source, comment }] : [],
    properties: [{ name: "plexus:commit", value: info.commit }],
  };
}

/** The Bun runtime an executable embeds: its npm package, with the integrity the build checked. */
export function bunRuntimeComponent({ pkg, version, integrity }) {
  const [alg, b64] = integrity.split("-");
  const hex = Buffer.from(b64, "base64").toString("hex");
  return {
    "bom-ref": `${pkg}@${version}`,
    type: "application",
    name: pkg,
    version,
    purl: `pkg:npm/${pkg.replace("@", "%40")}@${version}`,
    hashes: [{ alg: alg.toUpperCase().replace("SHA", "SHA-"), content: hex }],
    licenses: [{ license: { id: "MIT" } }],
  };
}

/**
 * The SBOM of the image of `variant` for `arch`: the bundled npm packages; its one executable (by
 * path and SHA-256, with Plexus's version and commit, and the release build it is) with the Bun
 * runtime it embeds (the component of the build's own SBOM); and the Debian glibc package its
 * libraries come from, by version, with each file copied from it by path and SHA-256.
 */
export function imageSbom({ info, arch, variant = "", executable, libc, npm, keep }) {
  const exe = {
    "bom-ref": `file:${executable.path}`,
    type: "file",
    name: executable.path,
    version: info.version,
    description: executable.build,
    hashes: [{ alg: "SHA-256", content: executable.sha256 }],
    properties: [
      { name: "plexus:commit", value: info.commit },
      { name: "plexus:build", value: executable.build },
    ],
  };
  const purl = `pkg:deb/debian/libc6@${encodeURIComponent(libc.version)}?arch=${arch}`;
  const glibc = {
    "bom-ref": purl,
    type: "library",
    name: "libc6",
    version: libc.version,
    purl,
    licenses: [{ expression: "LGPL-2.1-or-later" }],
    components: libc.files.map((f) => ({
      "bom-ref": `file:${f.path}`,
      type: "file",
      name: f.path,
      version: libc.version,
      hashes: [{ alg: "SHA-256", content: f.sha256 }],
    })),
  };
  const name = `plexus-image-linux-${arch}${variant ? `-${variant}` : ""}`;
  const subject = plexusComponent({ info, name, type: "container" });
  const extra = [exe, executable.runtime, glibc];
  return sealSbom(baseSbom({ info, subject, extra, npm, keep }));
}
