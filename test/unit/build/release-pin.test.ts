/**
 * deploy/ pinned by digest for a release (scripts/release-pin.mjs), run as the release workflow
 * runs it, on a copy of deploy/: rendered with `kubectl kustomize`, every container names the
 * image by digest alone; the kustomization keeps its comments and every other key; a reference
 * without a well-formed digest is refused with the file left as it was.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load, loadAll } from "js-yaml";
import { afterAll, describe, expect, it } from "vitest";
import { DEPLOY, type Manifest } from "../../support/deploy-render";
import { REPO_ROOT } from "../../support/plexus-bin";

const home = mkdtempSync(join(tmpdir(), "plx-release-pin-"));
const DIGEST = `sha256:${"0123456789abcdef".repeat(4)}`;
const REPOSITORY = "registry.example.test:5000/plexus-project/plexus";

function deployCopy(name: string): string {
  const dir = join(home, name);
  cpSync(DEPLOY, dir, { recursive: true });
  return dir;
}

function pin(dir: string, image: string) {
  const script = join(REPO_ROOT, "scripts/release-pin.mjs");
  return spawnSync(process.execPath, [script, "--dir", dir, "--image", image], {
    encoding: "utf8",
  });
}

function containerImages(dir: string): string[] {
  const out = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8", timeout: 60_000 });
  const docs = (loadAll(out) as Manifest[]).filter((d) => d?.kind === "DaemonSet");
  expect(docs).toHaveLength(1);
  const pod = docs[0]!.spec.template.spec;
  return [...(pod.initContainers ?? []), ...pod.containers].map((c: { image: string }) => c.image);
}

describe("scripts/release-pin.mjs", () => {
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("pins every container of the rendered deploy/ to the image by digest, no tag", () => {
    const dir = deployCopy("pinned");
    const r = pin(dir, `${REPOSITORY}@${DIGEST}`);
    expect(r.status, r.stderr).toBe(0);
    const images = containerImages(dir);
    expect(images.length).toBeGreaterThan(0);
    expect(new Set(images)).toEqual(new Set([`${REPOSITORY}@${DIGEST}`]));
  });

  it("a tag beside the digest is dropped: the digest decides", () => {
    const dir = deployCopy("tag-and-digest");
    const r = pin(dir, `${REPOSITORY}:0.2.0@${DIGEST}`);
    expect(r.status, r.stderr).toBe(0);
    expect(new Set(containerImages(dir))).toEqual(new Set([`${REPOSITORY}@${DIGEST}`]));
  });

  it("only the images entry changes: comments and every other key stay", () => {
    const dir = deployCopy("kept");
    const before = readFileSync(join(DEPLOY, "kustomization.yaml"), "utf8");
    expect(pin(dir, `${REPOSITORY}@${DIGEST}`).status).toBe(0);
    const after = readFileSync(join(dir, "kustomization.yaml"), "utf8");
    const comments = (text: string) => text.split("\n").filter((l) => /^\s*#/.test(l));
    expect(comments(after)).toEqual(comments(before));
    const { images: _old, ...rest } = load(before) as Record<string, unknown>;
    const { images, ...restAfter } = load(after) as Record<string, unknown>;
    expect(restAfter).toEqual(rest);
    expect(images).toEqual([{ name: "localhost/plexus", newName: REPOSITORY, digest: DIGEST }]);
  });

  it("a reference without a digest, or with a malformed one, is refused and nothing is written", () => {
    const dir = deployCopy("refused");
    const file = join(dir, "kustomization.yaml");
    const before = readFileSync(file, "utf8");
    const refused: Array<[string, RegExp]> = [
      [
        `${REPOSITORY}:0.2.0`,
        /names no digest: a release pins <name>@sha256:<64 hex>, never a tag/,
      ],
      [`${REPOSITORY}@${DIGEST.slice(0, -1)}`, /64 lowercase hex/],
      [`${REPOSITORY}@${DIGEST.toUpperCase().replace("SHA256", "sha256")}`, /64 lowercase hex/],
      [`${REPOSITORY}@sha512:${"a".repeat(64)}`, /must be sha256:/],
      [`Registry.Example/Plexus@${DIGEST}`, /is not an image repository name/],
    ];
    for (const [image, why] of refused) {
      const r = pin(dir, image);
      expect(r.status, image).toBe(1);
      expect(r.stderr, image).toMatch(why);
      expect(readFileSync(file, "utf8"), image).toBe(before);
    }
  });
});
