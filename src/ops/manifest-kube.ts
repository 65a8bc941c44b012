/**
 * A cluster-less dry run (`plexus explain --file pod.yaml --nads DIR`): the pod from one manifest
 * file, the NADs (and DRA's ResourceClaims and ResourceSlices) from a directory of manifests (the
 * file-backed cluster's reader). Read-only.
 */
import { readFileSync } from "node:fs";
import { loadAll } from "js-yaml";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { FileCluster } from "../cluster/file-cluster";
import type { ResourceSlice } from "../cluster/dra-objects";
import type { KubeApi } from "../cluster/kube-api";
import { ObjectReader, type ReadAnswer, type ReadKind, type ReadRef } from "../cluster/reads";
import type { Nad, Pod } from "../npwg/types";

/** The first Pod (or NetworkAttachmentDefinition, with `kind`) in a YAML/JSON manifest file. */
export function readManifest<T extends Pod | Nad>(
  path: string,
  kind: "Pod" | "NetworkAttachmentDefinition",
): T[] {
  let docs: unknown[];
  try {
    docs = loadAll(readFileSync(path, "utf8"));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${path}: ${
        e.code
          ? `cannot be read (${e.code})`
          : `is not valid YAML/JSON: ${e.message.split("\n")[0]}`
      }`,
    );
  }
  const items = docs.flatMap((d) =>
    isPlainObject(d) && d.kind === "List" && Array.isArray(d.items) ? d.items : [d],
  );
  const out: T[] = [];
  for (const d of items) {
    if (
      !isPlainObject(d) ||
      d.kind !== kind ||
      !isPlainObject(d.metadata) ||
      typeof d.metadata.name !== "string"
    )
      continue;
    const namespace =
      typeof d.metadata.namespace === "string" && d.metadata.namespace
        ? d.metadata.namespace
        : "default";
    out.push({ ...d, metadata: { ...d.metadata, namespace } } as unknown as T);
  }
  if (out.length === 0)
    throw new CniError(Code.InvalidNetworkConfig, `${path}: no ${kind} with a metadata.name in it`);
  return out;
}

export class ManifestKube extends ObjectReader implements KubeApi {
  readonly pod: Pod;
  private readonly nads: FileCluster | undefined;

  constructor(podFile: string, nadDir: string | undefined) {
    super();
    this.pod = readManifest<Pod>(podFile, "Pod")[0]!;
    this.nads = nadDir ? new FileCluster(nadDir) : undefined;
  }

  /**
   * The pod of the file; every other object (NADs, and for DRA ResourceClaims) from the
   * directory, none without one.
   */
  override async read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>> {
    return (kind === "pod" ? this.filePod(ref) : await this.nads?.read(kind, ref)) as ReadAnswer<K>;
  }

  private filePod({ namespace, name }: ReadRef): Pod {
    if (this.pod.metadata.namespace === namespace && this.pod.metadata.name === name)
      return this.pod;
    throw new CniError(
      Code.UnknownContainer,
      `pod ${namespace}/${name} is not the pod of the given file`,
    );
  }

  /** DRA: ResourceSlices from the same directory as the NADs. */
  async listResourceSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]> {
    return (await this.nads?.listResourceSlices(query)) ?? [];
  }

  async setNetworkStatus(): Promise<void> {}
  async recordEvent(): Promise<void> {}
}
