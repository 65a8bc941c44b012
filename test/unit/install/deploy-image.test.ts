/**
 * deploy/ names the image `npm run image` builds (localhost/plexus:<version>, a manifest list of
 * amd64 and arm64) through kustomize `images:`, where a user names their registry once, and runs
 * the DaemonSet only on nodes of those architectures.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { load, loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

const version = (
  JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }
).version;
const yaml = (file: string) => readFileSync(join(REPO_ROOT, "deploy", file), "utf8");
const daemonSet = loadAll(yaml("daemonset.yaml")).find((d: any) => d?.kind === "DaemonSet") as any;
/** The image name scripts/image.mjs tags (its IMAGE constant, read from the source). */
const builtName = /export const IMAGE = "([^"]+)"/.exec(
  readFileSync(join(REPO_ROOT, "scripts/image.mjs"), "utf8"),
)?.[1];

describe("deploy/ and the image", () => {
  it("M11 every container names the built image at the package's version, and kustomization.yaml's images: sets that name once", () => {
    expect(builtName).toBe("localhost/plexus");
    const images = daemonSet.spec.template.spec.containers.map((c: { image: string }) => c.image);
    expect(images.length).toBeGreaterThan(0);
    expect(new Set(images)).toEqual(new Set([`${builtName}:${version}`]));
    const k = load(yaml("kustomization.yaml")) as {
      images: Array<{ name: string; newName?: string; newTag: string }>;
    };
    expect(k.images).toEqual([{ name: builtName, newName: builtName, newTag: version }]);
  });

  it("M11 the DaemonSet runs only on linux nodes of the architectures the image has (amd64, arm64)", () => {
    const pod = daemonSet.spec.template.spec;
    expect(pod.nodeSelector).toEqual({ "kubernetes.io/os": "linux" });
    expect(
      pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
    ).toEqual([
      {
        matchExpressions: [
          { key: "kubernetes.io/arch", operator: "In", values: ["amd64", "arm64"] },
        ],
      },
    ]);
  });
});
