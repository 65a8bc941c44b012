/**
 * The I/O behind NPWG resolution: NADs through the KubeApi, CNI config files from `confDir`
 * (read once per call), and plain paths for `clusterNetwork` given as a file or directory (M2).
 * Each config file comes with a reader of its network's plugin folder (libcni 1.3), which only the
 * file picked for a network calls. src/npwg stays pure by receiving this as an interface.
 */
import { type Dirent, readdirSync } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { KubeApi } from "../cluster/kube-api";
import type { PluginFile, PluginFolder } from "../npwg/conf-dir";
import type { NetworkSource } from "../npwg/default-network";
import type { ConfFile } from "../npwg/nad";
import { readSharedFile } from "../store/shared-file";

const CONFIG_FILE = /\.(conf|conflist|json)$/;
/** Conf files are small; anything larger is not a CNI config. */
const MAX_CONF_FILE_BYTES = 1024 * 1024;

/** A directory entry that could not be read as a config file, and why. */
export interface Unreadable {
  path: string;
  problem: string;
}

export class FsNetworkSource implements NetworkSource {
  private confDirCache?: Promise<ConfFile[]>;
  readonly getNad: NetworkSource["getNad"];

  constructor(
    private readonly confDir: string,
    kube: KubeApi | undefined,
  ) {
    if (kube) this.getNad = (namespace, name) => kube.getNad(namespace, name);
  }

  confDirFiles(): Promise<ConfFile[]> {
    this.confDirCache ??= readConfigFiles(this.confDir);
    return this.confDirCache;
  }

  async readPath(path: string): Promise<ConfFile | undefined> {
    const content = readConfFile(path);
    if (content === undefined) return undefined;
    return { path, content, pluginFolder: pluginFolderReader(dirname(path)) };
  }

  async listDir(path: string): Promise<ConfFile[] | undefined> {
    try {
      if (!(await stat(path)).isDirectory()) return undefined;
    } catch {
      return undefined;
    }
    return readConfigFiles(path);
  }

  /**
   * M12: the auxiliary chain's `.conf` entries, each read or with why it cannot be (a FIFO, a
   * directory, a file over the cap): the chain reports those instead of skipping them. Undefined
   * when `path` is not a directory; hidden names (atomic writers' temp files) are left out.
   */
  async listChainDir(path: string): Promise<Array<ConfFile | Unreadable> | undefined> {
    let names: string[];
    try {
      if (!(await stat(path)).isDirectory()) return undefined;
      names = await readdir(path);
    } catch {
      return undefined;
    }
    return names
      .filter((n) => n.endsWith(".conf") && !n.startsWith("."))
      .sort()
      .flatMap((name): Array<ConfFile | Unreadable> => {
        const file = join(path, name);
        const read = readSharedFile(file, { maxBytes: MAX_CONF_FILE_BYTES, followSymlink: true });
        if (read.state === "found") return [{ path: file, content: read.data.toString("utf8") }];
        return read.state === "missing" ? [] : [{ path: file, problem: read.reason }];
      });
  }
}

async function readConfigFiles(dir: string): Promise<ConfFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const files: ConfFile[] = [];
  const pluginFolder = pluginFolderReader(dir);
  for (const name of names.filter((n) => CONFIG_FILE.test(n) && !n.startsWith(".")).sort()) {
    const path = join(dir, name);
    const content = readConfFile(path);
    if (content !== undefined) files.push({ path, content, pluginFolder });
  }
  return files;
}

/** The plugin folders of `dir`'s networks, each read at most once per listing. */
function pluginFolderReader(dir: string): (networkName: string) => PluginFolder | undefined {
  const read = new Map<string, PluginFolder | undefined>();
  return (networkName) => {
    if (!read.has(networkName)) read.set(networkName, readPluginFolder(join(dir, networkName)));
    return read.get(networkName);
  };
}

/**
 * A network's plugin folder as libcni 1.3 reads it (`NetworkPluginConfsFromFiles`): its `.conf`
 * entries that are not directories, in name order. Undefined when there is no directory there (a
 * stray file of that name is not a folder). Each file goes through the shared-file reader, and
 * all of them together are held to one config file's cap: the conflist they join is one config.
 * Hidden names are left out, as in the directory itself (atomic writers' temp files); libcni
 * would read them.
 */
function readPluginFolder(folder: string): PluginFolder | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    return { dir: folder, files: [], problem: `cannot be listed (${code ?? String(err)})` };
  }
  const names = entries
    .filter((e) => !e.isDirectory() && e.name.endsWith(".conf") && !e.name.startsWith("."))
    .map((e) => e.name)
    .sort();
  let budget = MAX_CONF_FILE_BYTES;
  // A file removed since the listing is not in the folder any more.
  const files = names.flatMap((name): PluginFile[] => {
    const path = join(folder, name);
    const read = readSharedFile(path, { maxBytes: budget, followSymlink: true });
    if (read.state === "missing") return [];
    if (read.state === "found") {
      budget -= read.data.length;
      return [{ path, content: read.data.toString("utf8") }];
    }
    const all = `the folder's files may hold ${MAX_CONF_FILE_BYTES} bytes in all`;
    return [{ path, problem: read.why === "too-large" ? `${read.reason} (${all})` : read.reason }];
  });
  return { dir: folder, files };
}

/**
 * A config file's text; undefined when it is missing, not a regular file (a FIFO would block the
 * call), too large or unreadable: skipped like any broken file. Symlinks are followed, as libcni
 * does (installers link their config in), but what is read is the file that was checked.
 */
function readConfFile(path: string): string | undefined {
  const file = readSharedFile(path, { maxBytes: MAX_CONF_FILE_BYTES, followSymlink: true });
  return file.state === "found" ? file.data.toString("utf8") : undefined;
}
