/**
 * The daemon's DRA routes (M10): this node's ResourceSlices from the daemon's watch
 * (watch/dra-watch.ts), so an ADD with a device network through DRA reads nothing from the API
 * server (a pod's ResourceClaims are served as every object read by name is, server.ts, from the
 * claim cache, watch/claim-cache.ts). Slices of another node are read live, never answered stale.
 *
 *   GET /v1/resource-slices?driver=&nodeName=    → { slices: [...], source }
 *   POST /v1/claim-status { namespace, name, devices } → { outcome } | { failed: { code, msg } }
 *        (D1: the daemon's client applies the claim's device status; the CNI call waits for it,
 *        as for network-status; a refusal is the API server's answer, passed on as it is)
 */
import { CniError, Code, isCniError } from "../cni/errors";
import {
  type ClaimDeviceStatus,
  type ResourceClaim,
  type ResourceSlice,
  trimClaimDeviceStatus,
} from "../cluster/dra-objects";
import type { KubeApi } from "../cluster/kube-api";
import { validateDns1123Label } from "../npwg/dns1123";

export interface DraCacheView {
  claim(q: { namespace: string; name: string; podUid?: string | undefined }): Promise<{
    claim: ResourceClaim | undefined;
    source: "cache" | "api";
  }>;
  nodeSlices(query: { nodeName?: string | undefined; driver: string }): ResourceSlice[] | undefined;
}

/** The shape of server.ts routes (the request itself is not needed: GETs with a query). */
type DraRoute = (req: unknown, url: URL) => Promise<[number, unknown]>;

function param(url: URL, key: string, required: boolean): string | undefined {
  const v = url.searchParams.get(key);
  if (v && v.length <= 253) return v;
  if (required || v)
    throw new CniError(
      Code.InvalidNetworkConfig,
      `daemon request: "${key}" is missing or longer than 253 characters`,
    );
  return undefined;
}

export function getResourceSlicesRoute(deps: {
  dra?: DraCacheView | undefined;
  api: KubeApi;
}): DraRoute {
  return async (_req, url) => {
    const q = { driver: param(url, "driver", true)!, nodeName: param(url, "nodeName", false) };
    const cached = deps.dra?.nodeSlices(q);
    if (cached) return [200, { slices: cached, source: "cache" }];
    const list = deps.api.listResourceSlices;
    if (!list) throw new CniError(Code.Internal, "the daemon's API client cannot read DRA objects");
    return [200, { slices: await list.call(deps.api, q), source: "api" }];
  };
}

/** More entries than any claim has devices: a request that is not a CNI call's. */
const MAX_STATUS_ENTRIES = 128;

/** POST /v1/claim-status (D1): the claim's device status, through the daemon's client. */
export function postClaimStatusRoute(deps: {
  api: KubeApi;
}): (body: Record<string, unknown>) => Promise<[number, unknown]> {
  return async (body) => {
    const namespace = validateDns1123Label(
      typeof body.namespace === "string" ? body.namespace : "",
      "ResourceClaim namespace",
    );
    const name = typeof body.name === "string" && body.name.length <= 253 ? body.name : "";
    const raw = Array.isArray(body.devices) ? body.devices : [];
    const devices = raw.flatMap((d): ClaimDeviceStatus[] => {
      const entry = trimClaimDeviceStatus(d);
      return entry ? [entry] : [];
    });
    if (!name || !Array.isArray(body.devices) || devices.length !== raw.length)
      throw new CniError(
        Code.InvalidNetworkConfig,
        'daemon request: "name" and "devices" (a list of device status entries) are required',
      );
    if (devices.length > MAX_STATUS_ENTRIES)
      throw new CniError(
        Code.InvalidNetworkConfig,
        `daemon request: more than ${MAX_STATUS_ENTRIES} device status entries`,
      );
    const apply = deps.api.applyClaimDeviceStatus;
    if (!apply) throw new CniError(Code.Internal, "the daemon's API client cannot write claims");
    // The API server's refusal is the answer, not a daemon failure: the CNI call must not write
    // again directly (thin mode) what the API server has just refused.
    try {
      return [200, { outcome: await apply.call(deps.api, { namespace, name }, devices) }];
    } catch (err) {
      if (!isCniError(err)) throw err;
      return [200, { failed: { code: err.code, msg: err.message } }];
    }
  };
}
