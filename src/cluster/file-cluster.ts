/**
 * A Kubernetes "cluster" made of a directory of manifests (YAML or JSON, multi-document, `List`s
 * allowed): the embedded default behind the README demo, and what people running Plexus by hand
 * or under a runtime without an API server use. Same {@link KubeApi} as the API server path, so
 * the whole NPWG code path runs unchanged. Chosen by the config key `fileClusterDir`.
 *
 * Writes go under `<dir>/status/` (never read back as manifests): the pod's network-status as a
 * pod-shaped JSON document, `<namespace>.<name>.json`, events as JSON lines in `events.jsonl`,
 * and Plexus's part of a claim's device status (D1) as a claim-shaped document,
 * `resourceclaims/<namespace>.<name>.json`, removed when Plexus's part is taken out.
 */
import { closeSync, constants, fstatSync, openSync, writeSync } from "node:fs";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { loadAll } from "js-yaml";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { describeYamlError } from "../cni/json-syntax";
import { writeFileAtomic } from "../store/atomic-file";
import { readSharedFile } from "../store/shared-file";
import { dns1123LabelProblem } from "../npwg/dns1123";
import { NETWORK_STATUS_ANNOTATION, type Nad, type Pod } from "../npwg/types";
import {
  type ClaimDeviceStatus,
  type ClaimStatusOutcome,
  DRA_GROUP,
  DRA_VERSION,
  type ResourceSlice,
  trimResourceClaim,
  trimResourceSlice,
} from "./dra-objects";
import { eventForPeople, type KubeApi, type PodEvent, type PodWrite } from "./kube-api";
import type { ReadAnswer, ReadKind, ReadRef, ReadRow } from "./reads";
import { isDns1123Subdomain, ObjectReader, READS } from "./reads";

const STATUS_DIR = "status";
const MANIFEST = /\.(ya?ml|json)$/;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

interface Objects {
  /**
   * Each object of reads.ts by kind, then `namespace/name`: pods and NADs as their manifests hold
   * them, ResourceClaims (M10, DRA) trimmed as the API path trims them.
   */
  byKind: { [K in ReadKind]: Map<string, NonNullable<ReadAnswer<K>>> };
  /** M10, DRA: ResourceSlices (cluster-scoped) in file order. */
  slices: ResourceSlice[];
  /**
   * Why a file or a document was left out (invalid YAML, too large, a bad name): reported only to
   * a call that looks for an object that is missing, since it may be in there. One invalid
   * manifest fails only the pods that need what it holds, not every ADD on the node.
   */
  broken: string[];
}

function emptyObjects(): Objects {
  const byKind = { pod: new Map(), nad: new Map(), resourceClaim: new Map() };
  return { byKind, slices: [], broken: [] };
}

export class FileCluster extends ObjectReader implements KubeApi {
  requestCount = 0;
  private objects?: Objects;

  constructor(readonly dir: string) {
    super();
  }

  /**
   * One object of reads.ts, looked up by its kind. Missing: 3 for a pod, `undefined` for the
   * rest; 7 instead, naming them, when manifests were left out (one of them may hold it).
   */
  override async read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>> {
    this.requestCount++;
    const objects = await this.load();
    const found = objects.byKind[kind].get(`${ref.namespace}/${ref.name}`);
    if (found) return found;
    const r: ReadRow = READS[kind];
    const { namespace, name } = ref;
    const missing = `${r.noun} ${namespace}/${name} is not among the manifests in ${this.dir}`;
    throwIfBroken(objects, missing);
    if (r.optional) return undefined as ReadAnswer<K>;
    throw new CniError(Code.UnknownContainer, missing);
  }

  async setNetworkStatus(pod: PodWrite, statusJson: string): Promise<void> {
    this.requestCount++;
    const doc = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        namespace: pod.namespace,
        name: pod.name,
        ...(pod.uid ? { uid: pod.uid } : {}),
        annotations: { [NETWORK_STATUS_ANNOTATION]: statusJson },
      },
    };
    await writeFileAtomic(
      this.statusPath(pod.namespace, pod.name),
      `${JSON.stringify(doc, null, 2)}\n`,
      0o644,
    );
  }

  async recordEvent(pod: PodWrite, event: PodEvent): Promise<void> {
    this.requestCount++;
    const dir = join(this.dir, STATUS_DIR);
    await mkdir(dir, { recursive: true });
    const line = {
      time: new Date().toISOString(),
      involvedObject: { kind: "Pod", ...pod },
      ...eventForPeople(event),
    };
    appendEvent(join(dir, "events.jsonl"), `${JSON.stringify(line)}\n`);
  }

  /** D1: Plexus's entries as the API server would hold them after the apply (none: file gone). */
  async applyClaimDeviceStatus(
    claim: { namespace: string; name: string },
    devices: ClaimDeviceStatus[],
  ): Promise<ClaimStatusOutcome> {
    this.requestCount++;
    const { namespace, name } = claim;
    const problem = objectNameProblem(namespace, name);
    if (problem)
      throw new CniError(
        Code.InvalidEnv,
        `ResourceClaim ${JSON.stringify(`${namespace}/${name}`)}: ${problem}; no status written`,
      );
    if (!(await this.load()).byKind.resourceClaim.has(`${namespace}/${name}`))
      return "claim-missing";
    const path = join(this.dir, STATUS_DIR, "resourceclaims", `${namespace}.${name}.json`);
    if (devices.length === 0) {
      await rm(path, { force: true });
      return "applied";
    }
    const doc = {
      apiVersion: `${DRA_GROUP}/${DRA_VERSION}`,
      kind: "ResourceClaim",
      metadata: { namespace, name },
      status: { devices },
    };
    await writeFileAtomic(path, `${JSON.stringify(doc, null, 2)}\n`, 0o644);
    return "applied";
  }

  async listResourceSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]> {
    this.requestCount++;
    const objects = await this.load();
    throwIfBroken(objects, `the ResourceSlices of driver ${query.driver} may be incomplete`);
    return objects.slices.filter(
      (s) =>
        s.spec.driver === query.driver && (!query.nodeName || s.spec.nodeName === query.nodeName),
    );
  }

  /**
   * The ResourceSlices of one node (`plexus validate`: which resource names its drivers publish).
   */
  async listNodeSlices(nodeName: string): Promise<ResourceSlice[]> {
    return (await this.complete()).slices.filter((s) => s.spec.nodeName === nodeName);
  }

  /** Every NAD of the directory (`plexus validate --all`). */
  async listNads(): Promise<Nad[]> {
    return [...(await this.complete()).byKind.nad.values()];
  }

  /** Every pod of the directory (`plexus validate`: what pods request of a NAD). */
  async listPods(): Promise<Pod[]> {
    return [...(await this.complete()).byKind.pod.values()];
  }

  /**
   * B71: the names become a file name, so they are the names Kubernetes allows, or the call fails
   * (4).
   */
  statusPath(namespace: string, name: string): string {
    const problem = objectNameProblem(namespace, name);
    if (problem)
      throw new CniError(
        Code.InvalidEnv,
        `pod ${JSON.stringify(`${namespace}/${name}`)}: ${problem}; no status written`,
      );
    return join(this.dir, STATUS_DIR, `${namespace}.${name}.json`);
  }

  /** For the listings (`plexus validate`): a left-out file makes a list incomplete, an error. */
  private async complete(): Promise<Objects> {
    const objects = await this.load();
    throwIfBroken(objects, `the manifests in ${this.dir} cannot all be listed`);
    return objects;
  }

  private async load(): Promise<Objects> {
    if (this.objects) return this.objects;
    const objects = emptyObjects();
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((n) => MANIFEST.test(n)).sort();
    } catch (err) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `fileClusterDir ${this.dir} cannot be read: ` +
          `${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        undefined,
        { cause: err },
      );
    }
    for (const name of names) {
      try {
        loadManifest(objects, join(this.dir, name));
      } catch (err) {
        if (!(err instanceof CniError)) throw err;
        objects.broken.push(err.message);
      }
    }
    this.objects = objects;
    return objects;
  }
}

/** Indexes one manifest file's objects; a document that cannot be indexed is reported. */
function loadManifest(objects: Objects, path: string): void {
  const text = readManifest(path);
  if (text === undefined) return;
  let docs: unknown[];
  try {
    docs = loadAll(text);
  } catch (err) {
    const where = describeYamlError(err);
    throw new CniError(Code.InvalidNetworkConfig, `${path} is not valid YAML/JSON ${where}`);
  }
  for (const doc of docs.flatMap((d) =>
    isPlainObject(d) && d.kind === "List" && Array.isArray(d.items) ? d.items : [d],
  ))
    try {
      index(objects, doc, path);
    } catch (err) {
      if (!(err instanceof CniError)) throw err;
      objects.broken.push(err.message);
    }
}

/** A missing object may be in a file that was left out: the error names those files (7). */
function throwIfBroken(objects: Objects, missing: string): void {
  if (objects.broken.length === 0) return;
  const shown = objects.broken.slice(0, 3).join("; ");
  const more = objects.broken.length > 3 ? `; and ${objects.broken.length - 3} more` : "";
  const msg = `${missing}, and some manifests were left out: ${shown}${more}`;
  throw new CniError(Code.InvalidNetworkConfig, msg);
}

/**
 * A manifest's text, read through the shared-file helper: only a regular file (a FIFO named
 * `*.yaml` would block the call forever, a symlink may point anywhere, a directory is no manifest;
 * all are skipped, B72, B73), only up to the size cap (a 50 MB file is refused from its size, not
 * after reading it whole), and read from the descriptor that was checked.
 */
function readManifest(path: string): string | undefined {
  const file = readSharedFile(path, { maxBytes: MAX_MANIFEST_BYTES });
  if (file.state === "found") return file.data.toString("utf8");
  if (file.state === "missing" || file.why === "not-regular") return undefined;
  if (file.why !== "too-large")
    throw new CniError(Code.InvalidNetworkConfig, `${path} cannot be read: ${file.reason}`);
  const size = file.size === undefined ? "grew past" : `is ${file.size} bytes, larger than`;
  throw new CniError(
    Code.InvalidNetworkConfig,
    `${path} ${size} the ${MAX_MANIFEST_BYTES}-byte limit for a manifest`,
  );
}

function index(objects: Objects, doc: unknown, path: string): void {
  if (!isPlainObject(doc) || !isPlainObject(doc.metadata) || typeof doc.metadata.name !== "string")
    return;
  const namespace =
    typeof doc.metadata.namespace === "string" && doc.metadata.namespace
      ? doc.metadata.namespace
      : "default";
  const key = `${namespace}/${doc.metadata.name}`;
  const problem = objectNameProblem(namespace, doc.metadata.name);
  if (problem && (doc.kind === "Pod" || doc.kind === "NetworkAttachmentDefinition"))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${path}: ${String(doc.kind)} ${JSON.stringify(key)}: ${problem}`,
    );
  const metadata = { ...doc.metadata, namespace } as Pod["metadata"];
  if (doc.kind === "Pod" && (doc.apiVersion === "v1" || doc.apiVersion === undefined)) {
    objects.byKind.pod.set(key, { ...(doc as object), metadata } as Pod);
  } else if (doc.kind === "NetworkAttachmentDefinition") {
    if (doc.apiVersion !== undefined && doc.apiVersion !== "k8s.cni.cncf.io/v1") {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `${path}: NetworkAttachmentDefinition ${key} has apiVersion ${String(doc.apiVersion)}; ` +
          `expected k8s.cni.cncf.io/v1`,
      );
    }
    objects.byKind.nad.set(key, { ...(doc as object), metadata } as Nad);
  } else if (typeof doc.apiVersion === "string" && doc.apiVersion.startsWith(`${DRA_GROUP}/`)) {
    indexDra(objects, doc, { key, namespace });
  }
}

/**
 * M10, DRA: a ResourceClaim or ResourceSlice of resource.k8s.io (trimmed as the API path trims it).
 */
function indexDra(
  objects: Objects,
  doc: Record<string, unknown>,
  at: { key: string; namespace: string },
): void {
  if (doc.kind === "ResourceClaim") {
    const claim = trimResourceClaim(doc, at.namespace);
    if (claim) objects.byKind.resourceClaim.set(at.key, claim);
  } else if (doc.kind === "ResourceSlice") {
    const slice = trimResourceSlice(doc);
    if (slice) objects.slices.push(slice);
  }
}

/** Why a namespace (a DNS-1123 label) or object name (a subdomain) is not one Kubernetes allows. */
function objectNameProblem(namespace: string, name: string): string | undefined {
  const ns = dns1123LabelProblem(namespace);
  if (ns) return `the namespace is not a valid DNS-1123 label (${ns})`;
  if (!isDns1123Subdomain(name))
    return (
      "the name is not a valid DNS-1123 subdomain (lower-case letters, digits, '-' and " +
      "'.', at most 253 characters)"
    );
  return undefined;
}

/**
 * Appends to the events file, never through a symlink and never blocking on a FIFO planted in its
 * place (B72, B73).
 */
function appendEvent(path: string, text: string): void {
  const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;
  const fd = openSync(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644);
  try {
    if (!fstatSync(fd).isFile())
      throw new CniError(Code.IoFailure, `${path} is not a regular file; event not written`);
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
