/**
 * Pods and NetworkAttachmentDefinitions as Plexus reads them: the few fields a CNI call needs.
 * Every reader of cluster data (the API client, the daemon's caches and its client, the admin
 * commands) keeps these trimmed shapes; ResourceClaims and ResourceSlices are in dra-objects.ts.
 */
import type { Nad, Pod } from "../npwg/types";
import { trimPodClaims } from "./dra-objects";

export const NAD_GROUP = "k8s.cni.cncf.io";
export const NAD_VERSION = "v1";
export const NAD_PLURAL = "network-attachment-definitions";

function isStringMap(value: unknown): value is Record<string, string> {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((x) => typeof x === "string")
  );
}

/** The fields of a v1 Pod Plexus reads (a watch cache keeps only these, too). */
export function trimPod(raw: Record<string, unknown>, fallbackNamespace: string): Pod | undefined {
  const m = raw.metadata as Record<string, unknown> | undefined;
  if (raw.kind !== undefined && raw.kind !== "Pod") return undefined;
  if (!m || typeof m.name !== "string" || !m.name) return undefined;
  const spec = raw.spec as Record<string, unknown> | undefined;
  // M10, DRA: a pod with claims keeps them (and its containers' extended resources); others
  // nothing more.
  const claims = trimPodClaims(raw);
  const nodeName =
    typeof spec?.nodeName === "string" && spec.nodeName ? { nodeName: spec.nodeName } : {};
  return {
    metadata: {
      name: m.name,
      namespace: typeof m.namespace === "string" ? m.namespace : fallbackNamespace,
      ...(typeof m.uid === "string" && m.uid ? { uid: m.uid } : {}),
      ...(typeof m.resourceVersion === "string" && m.resourceVersion
        ? { resourceVersion: m.resourceVersion }
        : {}),
      ...(isStringMap(m.annotations) ? { annotations: { ...m.annotations } } : {}),
    },
    ...(nodeName.nodeName || claims.spec ? { spec: { ...nodeName, ...claims.spec } } : {}),
    ...(claims.status ? { status: claims.status } : {}),
  };
}

/** The fields of a NetworkAttachmentDefinition Plexus reads. */
export function trimNad(raw: Record<string, unknown>, fallbackNamespace: string): Nad | undefined {
  const meta = raw.metadata as Record<string, unknown> | undefined;
  if (raw.kind !== undefined && raw.kind !== "NetworkAttachmentDefinition") return undefined;
  if (typeof meta?.name !== "string") return undefined;
  const spec = raw.spec as Record<string, unknown> | undefined;
  return {
    apiVersion: typeof raw.apiVersion === "string" ? raw.apiVersion : `${NAD_GROUP}/${NAD_VERSION}`,
    kind: "NetworkAttachmentDefinition",
    metadata: {
      name: meta.name,
      namespace: typeof meta.namespace === "string" ? meta.namespace : fallbackNamespace,
      ...(isStringMap(meta.annotations) ? { annotations: { ...meta.annotations } } : {}),
      ...(typeof meta.resourceVersion === "string"
        ? { resourceVersion: meta.resourceVersion }
        : {}),
    },
    ...(spec && typeof spec === "object"
      ? { spec: typeof spec.config === "string" ? { config: spec.config } : {} }
      : {}),
  };
}
