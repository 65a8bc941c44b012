/**
 * Interface names of a pod's attachments (N4.1.2.1.5, N4.2): the default network has CNI_IFNAME
 * (normally eth0); a selection with `interface` gets it; the others get `net<N>` with N the
 * selection's 1-based position (Multus's numbering, so existing pods keep their names), moving to
 * the next free number only when that name is taken by an explicit request. A name used twice
 * fails the attachment: generated names are unique within the pod.
 */
import { CniError, Code } from "../cni/errors";
import type { NetworkSelection } from "./types";

function describe(sel: NetworkSelection, i: number): string {
  return `item ${i + 1} (${sel.namespace}/${sel.name})`;
}

export function assignInterfaceNames(selections: readonly NetworkSelection[], defaultIfName: string): string[] {
  const owner = new Map<string, string>([[defaultIfName, "the default network"]]);
  selections.forEach((sel, i) => {
    if (sel.interfaceRequest === undefined) return;
    const prev = owner.get(sel.interfaceRequest);
    if (prev !== undefined) {
      throw new CniError(Code.InvalidNetworkConfig, `networks annotation ${describe(sel, i)}: interface ${JSON.stringify(sel.interfaceRequest)} is already used by ${prev}`);
    }
    owner.set(sel.interfaceRequest, describe(sel, i));
  });
  return selections.map((sel, i) => {
    if (sel.interfaceRequest !== undefined) return sel.interfaceRequest;
    let n = i + 1;
    while (owner.has(`net${n}`)) n++;
    const name = `net${n}`;
    owner.set(name, describe(sel, i));
    return name;
  });
}
