/**
 * The delegate gate: the one place a network list becomes something the runner will execute
 * (libcni/vouch.ts). Every path to a delegate passes here: ADD, DEL, CHECK, STATUS, GC, the
 * rollback of a failed ADD or hot-plug, the retry of a failed DEL, housekeeping, and the
 * take-over's DEL of pods Multus attached. docs/security.md lists them.
 *
 * - Every verb: the policy (policy.ts: plugin and IPAM types, namespace isolation, devices, host
 *   ports) on the very config that will run.
 * - ADD (`vetAttach`) also owns the interface: the name must not exist in the pod's namespace
 *   before the attachment's first plugin runs, so whatever a DEL or a rollback later removes
 *   under that name is an interface this attachment created.
 * - DEL, CHECK, GC and every rollback run the recorded config (`vetRecorded`); a NAD's current
 *   config replaces it only through `vetReplacement`.
 */
import type { ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { vouch, vouchForAdd, type VettedAttach, type VettedList } from "../libcni/vouch";
import { isPlainObject } from "../cni/json";
import { getKeyFold } from "../cni/keys";
import { checkPolicy, type GatePolicy, type GateSubject } from "./policy";

export type { GatePolicy, GateSubject } from "./policy";

/** Which interfaces exist in a namespace (netns/links.ts; a fake in unit tests). */
export interface LinkProbe {
  linkExists(netns: string, name: string): Promise<boolean>;
}

export interface GateContext {
  policy: GatePolicy;
  /** The pod's namespace (CNI_ARGS or the record): isolation is checked against it. */
  podNamespace?: string | undefined;
}

/**
 * The planner's check of a whole plan before the record is written and before any delegate runs:
 * the same rules, so a refused network fails the ADD (or hot-plug) before anything changes. Vets
 * nothing: each run is still vetted where it runs.
 */
export function checkPlan(subjects: readonly GateSubject[], ctx: GateContext): void {
  for (const subject of subjects) checkPolicy(subject, ctx);
}

/** DEL, CHECK, STATUS, GC, a rollback: the config as recorded (or configured), vetted. */
export function vetRecorded(subject: GateSubject, ctx: GateContext): VettedList {
  checkPolicy(subject, ctx);
  return vouch(subject.conf);
}

/**
 * ADD (and hot-plug's ADD): the policy, then the interface. A name that already exists in the
 * pod's namespace (`lo`, an interface another component made) is refused before any plugin runs,
 * so no rollback or DEL ever removes it.
 */
export async function vetAttach(
  subject: GateSubject,
  ctx: GateContext & { netns: string; links: LinkProbe },
): Promise<VettedAttach> {
  checkPolicy(subject, ctx);
  if (ctx.netns !== "" && (await ctx.links.linkExists(ctx.netns, subject.ifName))) {
    const chosen = subject.selection
      ? "; choose another interface name in the pod's selection (network@name)"
      : "";
    throw new CniError(
      subject.selection ? Code.InvalidNetworkConfig : Code.InvalidEnv,
      `network ${subject.network}: interface ${JSON.stringify(subject.ifName)} already exists ` +
        `in the pod's network namespace and Plexus did not create it; nothing was run${chosen}`,
    );
  }
  return vouchForAdd(subject.conf);
}

/**
 * A failed DEL's retry with the NAD's current config (an admin repaired it): allowed only when
 * the current config passes the policy and runs the same network (its name, which keys the
 * result cache and IPAM's state) with the same plugin and IPAM types, in order, and IPAM state
 * kept in the same place (ipamStateKey), as the recorded one. Anything else keeps the recorded
 * config as the only one that runs.
 */
export function vetReplacement(
  recorded: GateSubject,
  current: GateSubject,
  ctx: GateContext,
): VettedList {
  checkPolicy(current, ctx);
  const same = sameNetwork(recorded.conf, current.conf);
  if (same !== true) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `network ${recorded.network}: the NAD's current config is not tried in place of the ` +
        `recorded one (${same}); only the recorded config is run for this attachment`,
    );
  }
  return vouch(current.conf);
}

function sameNetwork(recorded: ConfList, current: ConfList): true | string {
  if (current.name !== recorded.name)
    return (
      `its network name is ${JSON.stringify(current.name)}, not ` +
      `${JSON.stringify(recorded.name)}`
    );
  const was = pluginTypes(recorded);
  const now = pluginTypes(current);
  if (was.join("\n") !== now.join("\n"))
    return `it runs ${now.join(", ")} where the record has ${was.join(", ")}`;
  // IPAM's state (its reservations, where it keeps them) is keyed by its config: another such
  // config could succeed its DEL while the recorded reservation stays.
  const ipam = (list: ConfList) => list.plugins.map((p) => ipamStateKey(p.ipam));
  if (ipam(recorded).join("\n") !== ipam(current).join("\n"))
    return "its ipam section keeps its reservations elsewhere than the recorded one";
  return true;
}

/**
 * What decides where an IPAM plugin keeps a container's reservations. host-local releases by
 * container and interface under `<dataDir>/<network name>` whatever its ranges say, so only its
 * `dataDir` counts (a repaired subnet still releases the recorded address); any other IPAM's
 * whole section counts, since Plexus cannot tell which of its keys locate its state.
 */
function ipamStateKey(ipam: unknown): string {
  if (!isPlainObject(ipam)) return JSON.stringify(ipam ?? null);
  if (ipam.type !== "host-local") return JSON.stringify(ipam);
  return JSON.stringify({ type: "host-local", dataDir: getKeyFold(ipam, "dataDir") ?? null });
}

/** Each plugin's type with its IPAM type, in order: what would run. */
function pluginTypes(list: ConfList): string[] {
  return list.plugins.map((p) =>
    isPlainObject(p.ipam) && typeof p.ipam.type === "string" ? `${p.type}+${p.ipam.type}` : p.type,
  );
}
