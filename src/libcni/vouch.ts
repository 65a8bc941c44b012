/**
 * The only network lists libcni runs: those the delegate gate (src/gate/) vouched for. A
 * `VettedList` is a type only this module makes, and `vouch` is imported by the gate alone
 * (.dependency-cruiser.cjs, rule `gate-only-vouches`), so a path that builds its own way to the
 * runner (a retry, a rollback, hot-plug, housekeeping) does not compile. The runner also checks at
 * run time that the very object it is given was vouched for, and a vouched list is frozen: what
 * was vetted is what runs.
 */
import type { ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";

declare const vetted: unique symbol;
declare const owned: unique symbol;

/** A network list the gate vetted for one run: frozen, and known to this module. */
export type VettedList = ConfList & { readonly [vetted]: true };
/** Vetted for ADD: its interface name was also checked to be free in the pod's namespace. */
export type VettedAttach = VettedList & { readonly [owned]: true };

const vouched = new WeakSet<object>();
const vouchedForAdd = new WeakSet<object>();

/** Marks `list` vetted and freezes it (deeply): the gate's last step. */
export function vouch(list: ConfList): VettedList {
  deepFreeze(list);
  vouched.add(list);
  return list as VettedList;
}

/** The same, for an ADD whose interface the gate found free. */
export function vouchForAdd(list: ConfList): VettedAttach {
  vouchedForAdd.add(vouch(list));
  return list as VettedAttach;
}

/**
 * The runner's check: the list it is about to run is one the gate vouched for (for ADD: as one).
 */
export function assertVouched(list: ConfList, verb: string): void {
  if (vouched.has(list) && (verb !== "ADD" || vouchedForAdd.has(list))) return;
  throw new CniError(
    Code.Internal,
    `network ${JSON.stringify(list.name)} reached the delegate runner (${verb}) without passing ` +
      "the delegate gate; nothing was run (this is a bug in Plexus: please report it)",
  );
}

/** Iterative, so a deep config cannot overflow the stack (decoded JSON holds no cycles). */
function deepFreeze(root: object): void {
  const stack: object[] = [root];
  while (stack.length > 0) {
    const value = stack.pop()!;
    Object.freeze(value);
    for (const child of Object.values(value))
      if (child !== null && typeof child === "object") stack.push(child);
  }
}
