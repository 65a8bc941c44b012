/**
 * The Multus configs the take-over keeps for the way back (M11, M18), by name: the first one of a
 * config `N` is `N.plexus-moved`, a later different one `N.plexus-moved.2`, `.3`, … An existing
 * kept copy is never written over; the way back restores the newest one that does not wrap
 * Plexus. libcni reads none of these names: none ends in `.conf`, `.conflist` or `.json`.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { isConfigFileName, MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import { readSharedFile } from "../store/shared-file";
import { type MultusKind, multusKindOf } from "./multus-config";

/** The suffix a Multus config is renamed to: libcni reads only `.conf`, `.conflist` and `.json`. */
export const MOVED_SUFFIX = ".plexus-moved";

/** The name of the `order`-th kept copy of `config` (1: the first, without a number). */
export function keptName(config: string, order: number): string {
  return order === 1 ? `${config}${MOVED_SUFFIX}` : `${config}${MOVED_SUFFIX}.${order}`;
}

export interface KeptCopy {
  /** The kept copy's file name in the conf dir. */
  name: string;
  /** The config name it goes back to. */
  config: string;
  /** 1 for the first kept, higher for later ones. */
  order: number;
}

const KEPT = /^(.+)\.plexus-moved(?:\.([2-9]|[1-9][0-9]{1,5}))?$/;

/** A kept copy's parts, or undefined for any other name. */
function parseKeptName(name: string): KeptCopy | undefined {
  const m = KEPT.exec(name);
  if (!m || !isConfigFileName(m[1]!)) return undefined;
  return { name, config: m[1]!, order: m[2] ? Number(m[2]) : 1 };
}

/** The kept copies among `names`, per config name, oldest first. */
export function keptCopiesOf(names: readonly string[]): Map<string, KeptCopy[]> {
  const byConfig = new Map<string, KeptCopy[]>();
  for (const name of names) {
    const kept = parseKeptName(name);
    if (!kept) continue;
    byConfig.set(kept.config, [...(byConfig.get(kept.config) ?? []), kept]);
  }
  for (const list of byConfig.values()) list.sort((a, b) => a.order - b.order);
  return byConfig;
}

/** The conf dir's names; none when it cannot be read. */
export function confDirNames(confDir: string): string[] {
  try {
    return readdirSync(confDir);
  } catch {
    return [];
  }
}

/** A file of the conf dir as text (no symlink followed, capped), or undefined. */
export function readConfText(path: string): string | undefined {
  const file = readSharedFile(path, { maxBytes: MAX_CONF_FILE_BYTES });
  return file.state === "found" ? file.data.toString("utf8") : undefined;
}

/** A kept copy and what it holds: Multus's config, one wrapping Plexus, or neither. */
export interface KeptState extends KeptCopy {
  kind: MultusKind | "unreadable";
}

/** The kept copies of `config` in `confDir`, oldest first, each read. */
export function readKeptCopies(confDir: string, copies: readonly KeptCopy[]): KeptState[] {
  return copies.map((copy) => {
    const text = readConfText(join(confDir, copy.name));
    return { ...copy, kind: text === undefined ? "unreadable" : multusKindOf(text) };
  });
}

/** M18: what the way back restores: the newest kept copy that is Multus's and wraps no Plexus. */
export function restorable(states: readonly KeptState[]): KeptState | undefined {
  return [...states].reverse().find((s) => s.kind === "multus");
}
