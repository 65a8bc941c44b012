/**
 * `plexus doctor` on the CNI config directory: the config the runtime picks (libcni's first
 * `.conf`, `.conflist` or `.json` by name) and whether it runs Plexus, and every file sorting
 * before Plexus's config that stands in its way. A file Plexus cannot read there (too large, a
 * FIFO, a symlink to a directory or to nothing) is still listed and loaded by the runtime, which
 * may stop at it (containerd does) or wait on a FIFO, and it keeps `plexus install` from taking
 * over from Multus (install/take-over.ts); so each such file is named with what to do (B90).
 */
import { basename, join } from "node:path";
import { decodeJson, isPlainObject } from "../cni/json";
import { plexusEntry } from "../config/plugin-conf";
import { MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import { PLEXUS_CONF_NAME } from "../install/options";
import {
  confDirEntries,
  type ConfDirEntry,
  type TakeOverBlocker,
  takeOverBlockers,
} from "../install/take-over";
import { runtimeConfig, type RuntimeChoice } from "./node-config";
import type { Finding } from "./validate";

type Add = (level: Finding["level"], subject: string, msg: string) => void;

const SUBJECT = "runtime config";

/** The first config in the dir that runs Plexus, by name; without one, the installer's default. */
function plexusConfigName(entries: readonly ConfDirEntry[]): string {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const entry of sorted) {
    if (!("content" in entry)) continue;
    try {
      const value = decodeJson(entry.content, { what: entry.name, maxBytes: MAX_CONF_FILE_BYTES });
      if (isPlainObject(value) && plexusEntry(value)) return entry.name;
    } catch {
      // Not JSON: not Plexus's config either.
    }
  }
  return PLEXUS_CONF_NAME;
}

function reportChoice(confDir: string, choice: RuntimeChoice, before: number, add: Add): void {
  if (!choice.path)
    add(
      "error",
      SUBJECT,
      `no usable CNI config in ${confDir}: the node is NotReady; is plexus install running?`,
    );
  else if (choice.isPlexus && before === 0)
    add("ok", SUBJECT, `${choice.path} (the first in ${confDir}) runs Plexus`);
  else if (choice.isPlexus)
    add(
      "error",
      SUBJECT,
      `${choice.path} runs Plexus, but the runtime lists ${before} file(s) before it that ` +
        "cannot be loaded (named below): a runtime may stop at the first (containerd does)",
    );
  else
    add(
      "error",
      SUBJECT,
      `the runtime uses ${choice.path}, not Plexus: Plexus's config must sort first in ` +
        `${confDir} (plexus install writes 00-plexus.conflist)`,
    );
}

function reportBlocker(confDir: string, plexusName: string, blocker: TakeOverBlocker, add: Add) {
  add(
    "error",
    SUBJECT,
    `${join(confDir, blocker.name)} sorts before ${plexusName} and ${blocker.why}: the runtime ` +
      "loads it before Plexus's config, and plexus install does not take over from Multus " +
      `while it is there. Move it out of ${confDir}, or rename it to end in neither .conf, ` +
      ".conflist nor .json",
  );
}

/** The runtime's config and the files sorting before Plexus's that the runtime would load first. */
export function checkRuntimeConfig(confDir: string, add: Add): void {
  const choice = runtimeConfig(confDir);
  const entries = confDirEntries(confDir);
  const plexusName = plexusConfigName(entries);
  // The runtime's own pick is named by reportChoice already.
  const blockers = takeOverBlockers(entries, plexusName).filter(
    (b) => join(confDir, b.name) !== choice.path,
  );
  const pickName = choice.path ? basename(choice.path) : undefined;
  const beforePick = pickName ? blockers.filter((b) => b.name < pickName).length : 0;
  reportChoice(confDir, choice, beforePick, add);
  for (const blocker of blockers) reportBlocker(confDir, plexusName, blocker, add);
  // The reader's own warning about a blocker says less than the error above.
  const named = blockers.map((b) => `${join(confDir, b.name)} `);
  for (const w of choice.warnings)
    if (!named.some((n) => w.startsWith(n))) add("warning", SUBJECT, w);
}
