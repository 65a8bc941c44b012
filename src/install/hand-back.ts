/**
 * The way back (M11, M18): with --no-take-over-multus, each Multus config the take-over moved
 * aside goes back under its name in one rename, so Multus's config sorts first again at once. What
 * goes back is the newest kept copy that does not wrap Plexus (kept-copies.ts), never one that
 * does, and never over a file someone wrote under that name since. The guards of that name go
 * just before the rename (Plexus's config is first meanwhile), the one on Multus's temp file just
 * after, so Multus's entrypoint can write its config again only once its own is back. A Multus
 * config wrapping Plexus that the runtime runs is named loudly: with the take-over off, nothing
 * moves it.
 */
import { lstatSync, renameSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../log/logger";
import { digestOf, sayOnce } from "./alerts";
import {
  confDirNames,
  type KeptCopy,
  keptCopiesOf,
  type KeptState,
  readKeptCopies,
  restorable,
} from "./kept-copies";
import { guardNames, isGuard, removeGuard, sweepGuardTemps } from "./multus-guard";
import { multusKindOf } from "./multus-config";
import {
  confDirEntries,
  type MultusMemory,
  type TakeOverOptions,
  type TakeOverResult,
} from "./take-over";

interface HandBackContext {
  options: TakeOverOptions;
  memory: MultusMemory;
  log: Logger;
  result: TakeOverResult;
}

/** The way back: every config Plexus moved aside goes back under its name, Multus's first. */
export function handBackToMultus(
  options: TakeOverOptions,
  memory: MultusMemory,
  log: Logger,
): TakeOverResult {
  const result: TakeOverResult = { moved: [], alerts: [] };
  const names = confDirNames(options.confDir);
  sweepGuardTemps(options.confDir, names);
  const kept = [...keptCopiesOf(names)].sort(([a], [b]) => (a < b ? -1 : 1));
  const ctx = { options, memory, log, result };
  for (const [config, copies] of kept) restoreOne(ctx, config, copies);
  reportWrappingInPlace(ctx);
  return result;
}

/** Something other than a guard of Plexus's is under the name (a file written since). */
function taken(path: string): boolean {
  try {
    lstatSync(path);
  } catch {
    return false;
  }
  return !isGuard(path);
}

function restoreOne(ctx: HandBackContext, config: string, copies: readonly KeptCopy[]): void {
  const { confDir } = ctx.options;
  const path = join(confDir, config);
  if (taken(path)) return;
  const states = readKeptCopies(confDir, copies);
  const pick = restorable(states);
  if (!pick) return refuseWayBack(ctx, config, states);
  const [tempName, ...names] = guardNames(config);
  for (const name of names) removeGuard(confDir, name);
  if (taken(path)) return;
  renameSync(join(confDir, pick.name), path);
  removeGuard(confDir, tempName!);
  const older = copies.filter((c) => c.name !== pick.name).map((c) => c.name);
  ctx.log.info(
    { config: path, from: pick.name, ...(older.length ? { keptStill: older } : {}) },
    "handed the node back to Multus: its config is restored",
  );
  ctx.result.moved.push(config);
}

/** M18: no kept copy of `config` can go back: each wraps Plexus (or cannot be read). */
function refuseWayBack(ctx: HandBackContext, config: string, states: readonly KeptState[]): void {
  const path = join(ctx.options.confDir, config);
  const list = states.map((s) => `${s.name} (${s.kind === "unreadable" ? "unreadable" : s.kind})`);
  const message =
    `not handing ${path} back to Multus: no kept copy is Multus's own config ` +
    `(${list.join(", ")}); ` +
    "one wrapping Plexus would fail every ADD, so Plexus's config stays first. To go back, " +
    "uninstall Plexus from this node (plexus uninstall), then restart Multus's pod there: its " +
    "entrypoint wraps the primary network's config again";
  sayOnce(ctx.memory.said, `no-way-back:${config}:${list.join()}`, () => {
    ctx.log.error({ config: path }, message);
    ctx.result.alerts.push({ type: "Warning", reason: "MultusConfigWrapsPlexus", message });
  });
}

/** A Multus config wrapping Plexus's that sorts before it: the runtime runs it, and fails. */
function reportWrappingInPlace(ctx: HandBackContext): void {
  const { confDir, plexusName } = ctx.options;
  for (const entry of confDirEntries(confDir)) {
    if (!("content" in entry) || entry.name >= plexusName) continue;
    if (multusKindOf(entry.content) !== "wraps-plexus") continue;
    const path = join(confDir, entry.name);
    const message =
      `${path} is Multus's config wrapping Plexus's ${plexusName}, and it sorts first: every ADD ` +
      "through it fails. With --no-take-over-multus the installer leaves it; without, it " +
      "removes it and Plexus's config is first. To run Multus, uninstall Plexus from this node, " +
      "then restart Multus's pod there: its entrypoint wraps the primary network's config again";
    sayOnce(ctx.memory.said, `in-place:${entry.name}:${digestOf(entry.content)}`, () => {
      ctx.log.error({ config: path }, message);
      ctx.result.alerts.push({ type: "Warning", reason: "MultusConfigWrapsPlexus", message });
    });
  }
}
