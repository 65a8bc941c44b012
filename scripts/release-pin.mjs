// Pins a copy of deploy/ to one image by digest, for a release (.github/workflows/release.yml): the
// kustomization's `images` entry for the name the DaemonSet uses gets the registry's name and the
// digest and loses its tag, as `kustomize edit set image localhost/plexus=<name>@sha256:<hex>`
// would write it; every other line of the file (its comments) is kept. A reference without a
// digest is refused: a tag can be moved to other bytes after the release, a digest cannot.
//   node scripts/release-pin.mjs --dir DIR --image <name>[:<tag>]@sha256:<64 hex>
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { dump, load } from "js-yaml";

/** The image name deploy/daemonset.yaml gives its containers (scripts/image.mjs tags it). */
const DEPLOYED_NAME = "localhost/plexus";
const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** A repository name as OCI distribution allows it (lowercase), with an optional registry port. */
const NAME =
  /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)+$/;

/** `{ newName, digest }` of `ref`; refuses a reference without a well-formed sha256 digest. */
function parseReference(ref) {
  const at = ref.indexOf("@");
  if (at < 0)
    throw new Error(
      `--image ${ref} names no digest: a release pins <name>@sha256:<64 hex>, never a tag`,
    );
  const digest = ref.slice(at + 1);
  if (!DIGEST.test(digest))
    throw new Error(`--image ${ref}: the digest must be sha256: and 64 lowercase hex digits`);
  let name = ref.slice(0, at);
  // A tag beside the digest says nothing the digest does not: dropped, as kustomize drops it.
  const slash = name.lastIndexOf("/");
  const colon = name.lastIndexOf(":");
  if (colon > slash) name = name.slice(0, colon);
  if (!NAME.test(name)) throw new Error(`--image ${ref}: ${name} is not an image repository name`);
  return { newName: name, digest };
}

/** The lines of the top-level `images:` block of `text`: [first, end). */
function imagesBlock(lines) {
  const first = lines.findIndex((l) => /^images:\s*(#.*)?$/.test(l));
  if (first < 0) return undefined;
  let end = first + 1;
  while (end < lines.length && /^(\s|-|$)/.test(lines[end])) end++;
  // Blank lines at the block's end belong to what follows.
  while (end > first + 1 && lines[end - 1].trim() === "") end--;
  return { first, end };
}

/** `text` (a kustomization.yaml) with its `images` entry for the deployed name pinned to `ref`. */
function pinKustomization(text, ref) {
  const pin = { name: DEPLOYED_NAME, ...parseReference(ref) };
  const doc = load(text);
  const images = Array.isArray(doc?.images) ? doc.images : [];
  if (!images.some((i) => i?.name === DEPLOYED_NAME))
    throw new Error(`the kustomization has no images entry named ${DEPLOYED_NAME} to pin`);
  const pinned = images.map((i) => (i?.name === DEPLOYED_NAME ? pin : i));
  const lines = text.split("\n");
  const block = imagesBlock(lines);
  if (!block) throw new Error("the kustomization's images: is not a top-level block");
  const replacement = dump({ images: pinned }, { indent: 2, noArrayIndent: false }).trimEnd();
  lines.splice(block.first, block.end - block.first, ...replacement.split("\n"));
  const out = lines.join("\n");
  // The edit is textual: the result must say what was meant, and nothing else may have moved.
  const check = load(out);
  if (JSON.stringify(check) !== JSON.stringify({ ...doc, images: pinned }))
    throw new Error("pinning the kustomization changed more than its images");
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { dir: { type: "string" }, image: { type: "string" } },
  });
  try {
    if (!values.dir || !values.image)
      throw new Error("usage: node scripts/release-pin.mjs --dir DIR --image <name>@sha256:<hex>");
    const file = join(values.dir, "kustomization.yaml");
    const pinned = pinKustomization(readFileSync(file, "utf8"), values.image);
    writeFileSync(`${file}.tmp`, pinned);
    renameSync(`${file}.tmp`, file);
    process.stderr.write(`release-pin: ${file}: ${DEPLOYED_NAME} -> ${values.image}\n`);
  } catch (err) {
    process.stderr.write(`release-pin: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
