/**
 * Hot-plug's diff (docs/hot-plug.md): what the pod's record holds against what its networks
 * annotation asks for now. Pure: data in, data out.
 *
 * - Only the annotation's attachments can change: the default network, the config's
 *   defaultNetworks and the auxiliary chain stay as the sandbox's ADD made them.
 * - An attachment is (network, interface). A selection that names its interface matches the
 *   attachment of that network on that interface; one that names none matches an attachment of
 *   that network whose interface was generated (the first, in the record's order).
 * - A matched selection whose parameters (ips, mac, portMappings, cni-args, …) changed is
 *   refused: the attachment stays as it is, with the reason (remove the selection, then add it
 *   again).
 * - A new selection without an interface gets the name ADD would give it for the annotation as
 *   it is now (npwg/ifnames.ts: `net<N>`, N its position, the plan's name), so that a later ADD
 *   of the same annotation (a re-created sandbox) agrees. When an attachment that stays (or an
 *   earlier new one) has that name, it gets the next free `net<M>`, M above N, as ADD would skip
 *   a taken name. The names of the attachments this reconcile removes are free (they are removed
 *   first).
 * - A new selection with `default-route` is refused: the pod's default route is where its
 *   sandbox's ADD put it, and hot-plug does not move it (nothing of the selection is attached).
 * - A new device network takes a device no attachment that stays holds (hotplug-devices.ts).
 */
import type { NetworkSelection } from "../npwg/types";
import { type DeviceContext, settleDevices } from "./hotplug-devices";
import type { Attachment } from "../nodestate/record";

interface Refusal {
  attachment: Attachment;
  reason: string;
}

export interface HotplugDiff {
  /** New attachments, each with its final interface name, in annotation order. */
  attach: Attachment[];
  /** Attachments of the record the annotation no longer selects, in record order. */
  detach: Attachment[];
  /** Selections that cannot be applied; the pod is left as it is for them. */
  refused: Refusal[];
}

/** Whether an attachment of the record is the annotation's (the only ones hot-plug may remove). */
export function isSelected(att: Attachment): boolean {
  return att.selection !== undefined && !att.isDefault && att.auxiliary !== true;
}

/** A selection's parameters: everything but its network and interface, keys sorted. */
function selectionParameters(sel: NetworkSelection): string {
  const { name: _n, namespace: _ns, interfaceRequest: _i, ...rest } = sel;
  return JSON.stringify(rest, Object.keys(rest).sort());
}

/** The record's attachment each wanted one matches (undefined: none), explicit names first. */
function matchAttachments(
  current: readonly Attachment[],
  wanted: readonly Attachment[],
): Array<Attachment | undefined> {
  const pool = current.filter(isSelected);
  const taken = new Set<Attachment>();
  const take = (pick: (att: Attachment) => boolean) => {
    const hit = pool.find((att) => !taken.has(att) && pick(att));
    if (hit) taken.add(hit);
    return hit;
  };
  const out: Array<Attachment | undefined> = wanted.map((w) => {
    const ifName = w.selection?.interfaceRequest;
    if (ifName === undefined) return undefined;
    return take((a) => a.network === w.network && a.ifName === ifName);
  });
  wanted.forEach((w, i) => {
    if (w.selection?.interfaceRequest !== undefined) return;
    const unnamed = (a: Attachment) => a.selection?.interfaceRequest === undefined;
    const generated = (a: Attachment) => a.network === w.network && unnamed(a);
    const params = selectionParameters(w.selection!);
    const same = (a: Attachment) => generated(a) && selectionParameters(a.selection!) === params;
    out[i] = take(same) ?? take(generated);
  });
  return out;
}

const GENERATED = /^net([1-9][0-9]*)$/;

/**
 * A new unnamed attachment's name: `planned` (ADD's, for the annotation as it is now) when no
 * other attachment has it, else the next free `netN` above it (ADD's own rule for a taken name);
 * the name is added to `used`.
 */
export function nextFreeIfName(used: Set<string>, planned = "net1"): string {
  let n = Number(GENERATED.exec(planned)?.[1] ?? 1);
  let name = `net${n}`;
  while (used.has(name)) name = `net${++n}`;
  used.add(name);
  return name;
}

/** Why a new selection cannot be attached to a running pod, if it cannot. */
function attachRefusal(w: Attachment): string | undefined {
  const gateways = w.selection?.defaultRoute;
  if (gateways === undefined || gateways.length === 0) return undefined;
  const named = w.selection?.interfaceRequest;
  const selection = `the selection of ${w.network}${named === undefined ? "" : `@${named}`}`;
  return (
    `${selection} asks for "default-route" (${gateways.join(", ")}), which applies only when ` +
    "the pod's sandbox is created: hot-plug does not move a running pod's default route, so " +
    'it attaches nothing for it (remove "default-route" from the selection to hot-plug it, ' +
    "or re-create the pod)"
  );
}

type Attachments = readonly Attachment[];

export function diffHotplug(
  current: Attachments,
  wanted: Attachments,
  devices: DeviceContext,
): HotplugDiff {
  const matches = matchAttachments(current, wanted);
  const matched = new Set(matches.filter((m): m is Attachment => m !== undefined));
  const detach = current.filter((a) => isSelected(a) && !matched.has(a));
  const refused: Refusal[] = [];
  wanted.forEach((w, i) => {
    const m = matches[i];
    if (m && selectionParameters(m.selection!) !== selectionParameters(w.selection!))
      refused.push({
        attachment: m,
        reason:
          `the parameters of ${m.network} on ${m.ifName} changed; a running pod's attachment ` +
          "is not changed in place (remove the selection, then add it again)",
      });
  });
  const staying = current.filter((a) => !detach.includes(a));
  const owner = new Map(staying.map((a) => [a.ifName, a.network]));
  const used = new Set(owner.keys());
  for (const w of wanted) if (w.selection?.interfaceRequest) used.add(w.selection.interfaceRequest);
  const attach: Attachment[] = [];
  wanted.forEach((w, i) => {
    if (matches[i]) return;
    const explicit = w.selection?.interfaceRequest;
    const inUse = explicit === undefined ? undefined : owner.get(explicit);
    const why =
      inUse === undefined ? attachRefusal(w) : `interface ${explicit} is in use by ${inUse}`;
    if (why !== undefined) {
      refused.push({ attachment: w, reason: why });
      return;
    }
    attach.push({ ...w, ifName: explicit ?? nextFreeIfName(used, w.ifName) });
  });
  const settled = settleDevices(attach, { staying, wanted, ctx: devices });
  return { attach: settled.attach, detach, refused: [...refused, ...settled.refused] };
}
