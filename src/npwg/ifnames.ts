/**
 * Interface names of a pod's attachments (N4.1.2.1.5, N4.2).
 *
 * - The default network has CNI_IFNAME (`defaultIfName`, normally eth0).
 * - A selection with `interface` (`interfaceRequest`) gets it. Explicit requests are placed first,
 *   all of them, so an explicit name always wins over a generated one.
 * - Every other selection gets `net<N>`, N its 1-based position in `selections` (Multus's
 *   numbering, so a pod keeps the names it had under Multus); when that name is already taken (by
 *   an explicit request, the default interface or an earlier generated name), the next free N.
 * - A name requested twice, or equal to `defaultIfName`, fails with code 7 naming both owners:
 *   names are unique within the pod, and the same network selected twice is two attachments.
 */
import { CniError, Code } from "../cni/errors";
import type { NetworkSelection } from "./types";

export interface InterfaceNameOptions {
  /**
   * How an error names selection `i` (0-based). Default: `networks annotation item <i+1>
   * (ns/name)`.
   * A caller that puts other selections first (the config's `defaultNetworks`) says so here, so the
   * item numbers in a message are the user's.
   */
  label?: (sel: NetworkSelection, index: number) => string;
}

const annotationItem = (sel: NetworkSelection, index: number) =>
  `networks annotation item ${index + 1} (${sel.namespace}/${sel.name})`;

export function assignInterfaceNames(
  selections: readonly NetworkSelection[],
  defaultIfName: string,
  opts: InterfaceNameOptions = {},
): string[] {
  const label = opts.label ?? annotationItem;
  const owner = new Map<string, string>([[defaultIfName, "the default network"]]);
  selections.forEach((sel, i) => {
    if (sel.interfaceRequest === undefined) return;
    const prev = owner.get(sel.interfaceRequest);
    if (prev !== undefined) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `${label(sel, i)}: interface ${JSON.stringify(sel.interfaceRequest)} is already used by ` +
          `${prev}`,
      );
    }
    owner.set(sel.interfaceRequest, label(sel, i));
  });
  return selections.map((sel, i) => {
    if (sel.interfaceRequest !== undefined) return sel.interfaceRequest;
    let n = i + 1;
    while (owner.has(`net${n}`)) n++;
    const name = `net${n}`;
    owner.set(name, label(sel, i));
    return name;
  });
}
