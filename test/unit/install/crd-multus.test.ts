/**
 * N3.1 drop-in means the same CRD: deploy/crd/ (as `kubectl kustomize` renders it) and the CRD
 * Multus v4.3.0 ships (test/fixtures/multus-crd/, copied verbatim, provenance in PROVENANCE.md)
 * parse to the same resource: name, group, scope, names and short names, versions and schema. So
 * `kubectl apply` of either over the other changes nothing, and `kubectl get nad` keeps working.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { renderKustomization } from "../../support/deploy-render";
import { REPO_ROOT } from "../../support/plexus-bin";

const FIXTURE_DIR = join(REPO_ROOT, "test/fixtures/multus-crd");
const FIXTURE = join(FIXTURE_DIR, "multus-v4.3.0-nad-crd.yaml");

type Crd = { apiVersion: string; kind: string; metadata: { name: string }; spec: any };

const parse = (path: string) =>
  (loadAll(readFileSync(path, "utf8")) as Array<Crd | null>).filter((d): d is Crd => d != null);

describe("the NetworkAttachmentDefinition CRD is Multus's", () => {
  const multus = parse(FIXTURE);
  const file = parse(join(REPO_ROOT, "deploy/crd/network-attachment-definition.yaml"));
  const rendered = renderKustomization("crd") as unknown as Crd[];

  it("the fixture is the file its PROVENANCE names (sha256), one CRD document", () => {
    const provenance = readFileSync(join(FIXTURE_DIR, "PROVENANCE.md"), "utf8");
    const sum = createHash("sha256").update(readFileSync(FIXTURE)).digest("hex");
    expect(provenance).toContain(sum);
    expect(provenance).toMatch(/tag \| v4\.3\.0 \|/);
    expect(multus.map((d) => d.kind)).toEqual(["CustomResourceDefinition"]);
  });

  it("N3.1 M14 deploy/crd/, as written and as rendered: Multus's resource, field for field", () => {
    for (const [what, ours] of [
      ["deploy/crd/network-attachment-definition.yaml", file],
      ["kubectl kustomize deploy/crd/", rendered],
    ] as const) {
      expect(ours.length, what).toBe(1);
      const [crd] = ours;
      const [theirs] = multus;
      expect(crd!.apiVersion, what).toBe(theirs!.apiVersion);
      expect(crd!.kind, what).toBe(theirs!.kind);
      expect(crd!.metadata, what).toEqual(theirs!.metadata);
      // Names and short names (nad, net-attach-def), scope, versions, the schema: all of spec.
      expect(crd!.spec, what).toEqual(theirs!.spec);
    }
  });

  it("N3.1 M14 `kubectl get nad` and `kubectl get net-attach-def` both name it", () => {
    const shortNames = file[0]!.spec.names.shortNames;
    expect(shortNames).toEqual(expect.arrayContaining(["nad", "net-attach-def"]));
  });
});
