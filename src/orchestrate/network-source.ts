/**
 * The I/O behind NPWG resolution: NADs through the KubeApi, CNI config files from `confDir`
 * (read once per call), and plain paths for `clusterNetwork` given as a file or directory (M2).
 * src/npwg stays pure by receiving this as an interface.
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { KubeApi } from "../cluster/kube-api";
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

  async readPath(path: string): Promise<string | undefined> {
    return readConfFile(path);
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
  for (const name of names.filter((n) => CONFIG_FILE.test(n) && !n.startsWith(".")).sort()) {
    const path = join(dir, name);
    const content = readConfFile(path);
    if (content !== undefined) files.push({ path, content });
  }
  return files;
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
