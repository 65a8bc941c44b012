/**
 * The release workflow (.github/workflows/release.yml) cannot run here: this checks its shape. It
 * runs on a pushed v* tag and nothing else, with exactly the permissions a release needs; every
 * action is pinned by commit, with its version beside it; it builds both image lists for amd64 and
 * arm64 from the Dockerfile, compares the images' executables with its own build, signs, attests,
 * and pins deploy/ by digest with the script the unit tests run; the scripts it names exist, and it
 * builds on the Node of the lock file, as the Dockerfile does.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

type Step = {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  with?: Record<string, string | boolean>;
  env?: Record<string, string>;
};
type Workflow = {
  on: unknown;
  permissions?: unknown;
  jobs: Record<string, { permissions?: unknown; steps: Step[] }>;
};

const TEXT = readFileSync(join(REPO_ROOT, ".github/workflows/release.yml"), "utf8");
const WORKFLOW = load(TEXT) as Workflow;
const STEPS = Object.values(WORKFLOW.jobs).flatMap((j) => j.steps);
const runs = STEPS.map((s) => s.run ?? "").join("\n");
/** `${{ expression }}` as the workflow writes it. */
const expr = (expression: string) => `\${{ ${expression} }}`;
const action = (name: string) => STEPS.filter((s) => s.uses?.startsWith(`${name}@`));

describe(".github/workflows/release.yml", () => {
  it("runs on a pushed v* tag only", () => {
    expect(WORKFLOW.on).toEqual({ push: { tags: ["v*"] } });
  });

  it("permissions: none by default; the one job writes contents and packages, and gets an OIDC token and attestations", () => {
    expect(WORKFLOW.permissions).toEqual({});
    const jobs = Object.values(WORKFLOW.jobs);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.permissions).toEqual({
      contents: "write",
      packages: "write",
      "id-token": "write",
      attestations: "write",
    });
  });

  it("every action is pinned by a 40-hex commit, its version in a comment", () => {
    const uses = TEXT.split("\n").filter((l) => /^\s*(-\s+)?uses:/.test(l));
    expect(uses.length).toBe(STEPS.filter((s) => s.uses).length);
    expect(uses.length).toBeGreaterThanOrEqual(7);
    for (const line of uses)
      expect(line).toMatch(/uses: [\w.-]+\/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$/);
  });

  it("builds both lists for linux/amd64 and linux/arm64 from the Dockerfile, the baseline one with VARIANT=baseline, pushed by digest", () => {
    const builds = action("docker/build-push-action");
    expect(builds.map((b) => b.id)).toEqual(["image", "baseline"]);
    for (const b of builds) {
      expect(b.with).toMatchObject({ context: ".", platforms: "linux/amd64,linux/arm64" });
      // BuildKit's own attestations would make each list's digest differ from build to build.
      expect(b.with).toMatchObject({ provenance: false, sbom: false });
      expect(String(b.with!["build-args"])).toMatch(/^SOURCE_DATE_EPOCH=\$\{\{ env.TIME \}\}$/m);
    }
    expect(String(builds[1]!.with!["build-args"])).toMatch(/^VARIANT=baseline$/m);
    expect(String(builds[0]!.with!["build-args"])).not.toMatch(/VARIANT/);
    expect(runs).toMatch(/name=\$image:\$version,\$push"/);
    expect(runs).toMatch(/name=\$image:\$version-baseline,\$push"/);
    expect(runs).toMatch(/push="push=true,rewrite-timestamp=true"/);
  });

  it("stops unless each image's executable is the one it built (SHA-256 in the image's SBOM against SHA256SUMS)", () => {
    expect(runs).toMatch(
      /npm run build:release\n\s*\(cd dist\/release && sha256sum -c SHA256SUMS\)/,
    );
    expect(runs).toContain('docker cp "$id:/usr/share/doc/plexus/sbom.cdx.json" "$sbom"');
    expect(runs).toContain(
      'if [ "$build" != "$want" ] || [ -z "$built" ] || [ "$held" != "$built" ]',
    );
  });

  it("signs both lists keyless and recursively, attests each image's SBOM and the provenance of everything", () => {
    const names = STEPS.map((s) => s.uses?.replace(/@.*/, "") ?? s.name);
    const signAt = STEPS.findIndex((s) => s.run?.includes("cosign sign"));
    expect(names.indexOf("sigstore/cosign-installer")).toBeLessThan(signAt);
    expect(runs).toContain('cosign sign --yes --recursive "$IMAGE@$DIGEST"');
    expect(runs).toContain('cosign sign --yes --recursive "$IMAGE@$BASELINE_DIGEST"');
    expect(runs).toMatch(/cosign attest --yes --type cyclonedx \\\n\s*--predicate "out\/sbom\//);
    const provenance = action("actions/attest-build-provenance");
    expect(provenance).toHaveLength(1);
    expect(provenance[0]!.with).toEqual({ "subject-checksums": "out/subjects.txt" });
    expect(runs).toContain("cat dist/release/SHA256SUMS >> out/subjects.txt");
  });

  it("pins deploy/ by the pushed digests with scripts/release-pin.mjs and renders it as release files", () => {
    const step = STEPS.find((s) => s.run?.includes("scripts/release-pin.mjs"))!;
    expect(step.env).toMatchObject({
      DIGEST: expr("steps.image.outputs.digest"),
      BASELINE_DIGEST: expr("steps.baseline.outputs.digest"),
    });
    expect(step.run).toContain('--image "$IMAGE@$DIGEST"');
    expect(step.run).toContain('--image "$IMAGE@$BASELINE_DIGEST"');
    expect(step.run).toMatch(
      /kubectl kustomize "out\/\$name" > "out\/assets\/plexus-\$VERSION.yaml"/,
    );
    const release = STEPS.at(-1)!;
    expect(release.run).toMatch(/gh release create "\$TAG" --verify-tag/);
    expect(release.run).toContain("out/assets/*");
  });

  it("every script it runs exists; it builds on the lock's Node, which the Dockerfile's build stage runs", () => {
    const scripts = [...runs.matchAll(/\bnode (scripts\/[\w.-]+\.mjs)/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    for (const s of scripts) expect(existsSync(join(REPO_ROOT, s)), s).toBe(true);
    const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8"));
    const node = lock.packages["node_modules/node"].version as string;
    expect(action("actions/setup-node")[0]!.with!["node-version"]).toBe(node);
    const dockerfile = readFileSync(join(REPO_ROOT, "Dockerfile"), "utf8");
    expect(dockerfile).toContain(
      `FROM --platform=$BUILDPLATFORM node:${node}-bookworm-slim AS build`,
    );
  });
});
