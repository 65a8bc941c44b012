/**
 * The protobuf wire form of the few pod-resources messages Plexus sends and reads (field numbers
 * of kubelet's pkg/kubelet/apis/podresources/v1 api.proto), by hand: a protobuf library is loaded
 * and builds its reflection before the first byte, more than the CNI process should pay for two
 * strings out and a few nested lists back (what protobufjs cost: docs/benchmarks.md, "Levers,
 * measured"). Fields Plexus does not
 * read (CPU ids, memory, topology, dynamic resources) are skipped by their wire type, so what
 * newer kubelets add does not matter.
 *
 * Only the pod asked about becomes objects, and at most `PeerLimits.maxPodEntries` of them: the
 * other pods of a List are compared as bytes, so an answer of millions of empty entries costs
 * its bytes and one pass over them, not an object each (M10).
 */
import { type PeerLimit, PeerLimits } from "./peer-limits";

interface ContainerDevices {
  resourceName?: string;
  deviceIds?: string[];
}
export interface PodResources {
  name?: string;
  namespace?: string;
  containers?: Array<{ name?: string; devices?: ContainerDevices[] }>;
}

/** A message that is not the protobuf it should be, or one past a limit (`limit` names which). */
export class WireError extends Error {
  override name = "WireError";
  constructor(
    message: string,
    readonly limit?: PeerLimit,
  ) {
    super(message);
  }
}

/** The entries decoded for one pod so far, against the cap. */
class EntryBudget {
  private used = 0;

  take(): void {
    if (++this.used > PeerLimits.maxPodEntries)
      throw new WireError(
        `a pod with over ${PeerLimits.maxPodEntries} containers, devices and device IDs`,
        "maxPodEntries",
      );
  }
}

const WIRE = { VARINT: 0, I64: 1, LEN: 2, I32: 5 };

/**
 * The fields of one message, in order: number, wire type, and the bytes of a length-delimited one.
 */
function* fieldsOf(
  bytes: Uint8Array,
): Generator<{ field: number; wire: number; data: Uint8Array }> {
  let pos = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; shift < 64; shift += 7) {
      if (pos >= bytes.length) throw new WireError("a varint runs past the message");
      const b = bytes[pos++]!;
      value += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return value;
    }
    throw new WireError("a varint longer than 10 bytes");
  };
  const skip = (n: number) => {
    if (pos + n > bytes.length) throw new WireError("a field runs past the message");
    pos += n;
  };
  while (pos < bytes.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === WIRE.LEN) {
      const length = varint();
      const start = pos;
      skip(length);
      yield { field, wire, data: bytes.subarray(start, start + length) };
    } else if (wire === WIRE.VARINT) varint();
    else if (wire === WIRE.I64) skip(8);
    else if (wire === WIRE.I32) skip(4);
    else throw new WireError(`wire type ${wire} (groups) is not used by pod-resources`);
  }
}

const text = (data: Uint8Array | undefined) =>
  data ? Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("utf8") : "";

/** The length-delimited fields `field` of `bytes`, each read by `read`. */
function repeated<T>(bytes: Uint8Array, field: number, read: (data: Uint8Array) => T): T[] {
  const out: T[] = [];
  for (const f of fieldsOf(bytes))
    if (f.field === field && f.wire === WIRE.LEN) out.push(read(f.data));
  return out;
}

/** The bytes of the last length-delimited field `field` (proto3: the last one wins), if any. */
function last(bytes: Uint8Array, field: number): Uint8Array | undefined {
  let found: Uint8Array | undefined;
  for (const f of fieldsOf(bytes)) if (f.field === field && f.wire === WIRE.LEN) found = f.data;
  return found;
}

function containerDevices(bytes: Uint8Array, budget: EntryBudget): ContainerDevices {
  budget.take();
  const deviceIds = repeated(bytes, 2, (id) => {
    budget.take();
    return text(id);
  });
  return { resourceName: text(last(bytes, 1)), deviceIds };
}

function podResources(bytes: Uint8Array): PodResources {
  const budget = new EntryBudget();
  return {
    name: text(last(bytes, 1)),
    namespace: text(last(bytes, 2)),
    containers: repeated(bytes, 3, (c) => {
      budget.take();
      const devices = repeated(c, 2, (d) => containerDevices(d, budget));
      return { name: text(last(c, 1)), devices };
    }),
  };
}

/** GetPodResourcesResponse: `pod_resources = 1`. */
export function decodeGetResponse(bytes: Uint8Array): { podResources?: PodResources } {
  const pod = last(bytes, 1);
  return pod ? { podResources: podResources(pod) } : {};
}

const EMPTY = new Uint8Array(0);
const sameBytes = (left: Uint8Array | undefined, right: Uint8Array) =>
  Buffer.compare(left ?? EMPTY, right) === 0;

type PodRef = { namespace: string; name: string };

/**
 * ListPodResourcesResponse (`repeated pod_resources = 1`): the first pod of that namespace and
 * name, the others compared by their bytes and never decoded.
 */
export function findPodInList(bytes: Uint8Array, pod: PodRef): PodResources | undefined {
  const name = Buffer.from(pod.name, "utf8");
  const namespace = Buffer.from(pod.namespace, "utf8");
  for (const f of fieldsOf(bytes)) {
    if (f.field !== 1 || f.wire !== WIRE.LEN) continue;
    const match = sameBytes(last(f.data, 1), name) && sameBytes(last(f.data, 2), namespace);
    if (match) return podResources(f.data);
  }
  return undefined;
}

function lengthDelimited(field: number, value: string): number[] {
  const bytes = Buffer.from(value, "utf8");
  const out = [field * 8 + WIRE.LEN];
  for (let n = bytes.length; ; n = Math.floor(n / 128)) {
    if (n < 128) {
      out.push(n);
      break;
    }
    out.push((n % 128) | 0x80);
  }
  return [...out, ...bytes];
}

/**
 * GetPodResourcesRequest: `pod_name = 1`, `pod_namespace = 2` (empty strings are not sent, as
 * proto3).
 */
export function encodeGetRequest(request: { podName: string; podNamespace: string }): Uint8Array {
  const out: number[] = [];
  if (request.podName) out.push(...lengthDelimited(1, request.podName));
  if (request.podNamespace) out.push(...lengthDelimited(2, request.podNamespace));
  return Uint8Array.from(out);
}

/** ListPodResourcesRequest has no fields. */
export const LIST_REQUEST = new Uint8Array(0);
