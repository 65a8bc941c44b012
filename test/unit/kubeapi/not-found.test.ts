/**
 * The one 404 classifier (rest-kube.ts notFoundIn): "missing" only for kube-apiserver's NotFound
 * Status that names the object asked for (name, resource as kind, group); every other 404 body
 * (plain text, a Status about another object or none) is "not-served", and no other status is
 * either. Generated bodies, fixed seed.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CniError, Code } from "../../../src/cni/errors";
import { type ApiResource, READS } from "../../../src/cluster/reads";
import { ApiStatusError, notFoundIn } from "../../../src/kubeapi/rest-kube";
import { propertyRuns } from "../../support/property";

const POD_RESOURCE = READS.pod.resource;
const NAD_RESOURCE = READS.nad.resource;
const CLAIM_RESOURCE = READS.resourceClaim.resource;

const answer = (status: number, body: string | object) => ({
  status,
  headers: {},
  body: Buffer.from(typeof body === "string" ? body : JSON.stringify(body)),
});
const notFound = (resource: ApiResource, name: string) => ({
  kind: "Status",
  apiVersion: "v1",
  status: "Failure",
  reason: "NotFound",
  message: `${resource.plural} "${name}" not found`,
  details: { name, kind: resource.plural, ...(resource.group ? { group: resource.group } : {}) },
  code: 404,
});

describe("notFoundIn: what a 404 means", () => {
  it("B38 a NotFound naming the object is 'missing', also behind a CniError's cause", () => {
    for (const r of [POD_RESOURCE, NAD_RESOURCE, CLAIM_RESOURCE]) {
      const err = new ApiStatusError(answer(404, notFound(r, "x1")));
      expect(notFoundIn(err, r, "x1")).toBe("missing");
      expect(
        notFoundIn(new CniError(Code.ApiFailure, "wrapped", undefined, { cause: err }), r, "x1"),
      ).toBe("missing");
    }
  });

  it("B38 plain text, a Status without details or naming another object: 'not-served'", () => {
    const cases = [
      answer(404, "404 page not found\n"),
      answer(404, {
        kind: "Status",
        reason: "NotFound",
        message: "the server could not find the requested resource",
      }),
      answer(404, notFound(POD_RESOURCE, "other")),
      answer(404, notFound(NAD_RESOURCE, "x1")),
    ];
    for (const a of cases)
      expect(notFoundIn(new ApiStatusError(a), POD_RESOURCE, "x1")).toBe("not-served");
    // A list has no name: any 404 is the resource not served.
    expect(
      notFoundIn(new ApiStatusError(answer(404, notFound(POD_RESOURCE, "x1"))), POD_RESOURCE),
    ).toBe("not-served");
    expect(notFoundIn(new ApiStatusError(answer(500, "x")), POD_RESOURCE, "x1")).toBeUndefined();
    expect(notFoundIn(new Error("x"), POD_RESOURCE, "x1")).toBeUndefined();
  });

  it("B38 generated 404 bodies: 'missing' exactly when the Status names the object", () => {
    const resources = fc.constantFrom(POD_RESOURCE, NAD_RESOURCE, CLAIM_RESOURCE);
    const field = (values: string[]) =>
      fc.option(fc.oneof(fc.constantFrom(...values), fc.string()), { nil: undefined });
    const body = fc.record({
      reason: field(["NotFound", "Gone"]),
      details: fc.option(
        fc.record({
          name: field(["x1"]),
          kind: field(["pods", "resourceclaims", "network-attachment-definitions"]),
          group: field(["", "resource.k8s.io", "k8s.cni.cncf.io"]),
        }),
        { nil: undefined },
      ),
    });
    fc.assert(
      fc.property(resources, body, fc.boolean(), (r, b, asText) => {
        const err = new ApiStatusError(
          answer(404, asText ? JSON.stringify(b).slice(1) : { kind: "Status", ...b }),
        );
        const d = b.details;
        const names =
          !asText &&
          b.reason === "NotFound" &&
          d?.name === "x1" &&
          d.kind === r.plural &&
          (d.group ?? "") === r.group;
        expect(notFoundIn(err, r, "x1")).toBe(names ? "missing" : "not-served");
      }),
      propertyRuns({ seed: 20261126, numRuns: 300 }),
    );
  });
});
