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
 * - A new selection without an interface gets the lowest `netN` (N from 1) that no attachment
 *   that stays, no explicit request of the annotation and no other new attachment uses; the
 *   names of the attachments this reconcile removes are free (they are removed first).
 */
import type { NetworkSelection } from "../npwg/types";
import type { Attachment } from "./record";

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

/** The next free `netN` (N from 1) outside `used`; the name is added to `used`. */
export function nextFreeIfName(used: Set<string>): string {
  let n = 1;
  while (used.has(`net${n}`)) n++;
  const name = `net${n}`;
  used.add(name);
  return name;
}

type Attachments = readonly Attachment[];

export function diffHotplug(current: Attachments, wanted: Attachments): HotplugDiff {
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
    if (inUse !== undefined) {
      refused.push({ attachment: w, reason: `interface ${explicit} is in use by ${inUse}` });
      return;
    }
    attach.push({ ...w, ifName: explicit ?? nextFreeIfName(used) });
  });
  return { attach, detach, refused };
}
