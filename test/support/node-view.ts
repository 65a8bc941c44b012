/**
 * A process that sees a node's filesystem as a container of deploy/ (or the node itself) does,
 * for the e2e tests of the node layouts: it runs chrooted in a mount namespace of its own
 * (`unshare --mount`, nothing propagates back) whose root holds only what the view binds. The
 * binds are the container's volume mounts, each from the directory that stands in for its node
 * path; what no bind brings in does not exist for the process, as in the container. Besides them
 * a view has what the image and the runtime give every container: the C library the executables
 * link (bound read-only from this machine, as the image carries it), /proc, /dev and /sys.
 */
import { spawn } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import type { E2eTool } from "./netns";

/** What a view needs on this machine, for describeE2e. */
export const VIEW_TOOLS: readonly E2eTool[] = [
  { command: "unshare", pkg: "util-linux" },
  { command: "chroot", pkg: "coreutils" },
  { command: "mount", pkg: "mount" },
];

/** One path of the view: `source` on this machine, seen at `target` inside. */
export interface Bind {
  target: string;
  source: string;
  readOnly?: boolean;
}

export interface View {
  /** The directory the process is chrooted into. */
  root: string;
  binds: readonly Bind[];
  /** As the container's readOnlyRootFilesystem: only the binds can be written. */
  readOnlyRoot?: boolean;
}

export interface ViewResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Where the executables' C library lives here: each a directory to bind, or a link to copy. */
const LIBRARY_DIRS = ["/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32"];

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The library dirs for a view: links made in its root now, directories returned to bind. */
function libraryBinds(root: string): Bind[] {
  const binds: Bind[] = [];
  for (const dir of LIBRARY_DIRS) {
    if (!existsSync(dir)) continue;
    if (lstatSync(dir).isSymbolicLink()) {
      const at = join(root, dir);
      if (!existsSync(at)) {
        mkdirSync(join(at, ".."), { recursive: true });
        symlinkSync(readlinkSync(dir), at);
      }
    } else binds.push({ target: dir, source: dir, readOnly: true });
  }
  return binds;
}

/** The shell script that builds the view in the new mount namespace and runs `argv` in it. */
function viewScript(view: View, argv: readonly string[]): string {
  const root = quote(view.root);
  const system: Bind[] = [
    ...libraryBinds(view.root),
    { target: "/proc", source: "/proc" },
    { target: "/dev", source: "/dev" },
    { target: "/sys", source: "/sys" },
  ];
  // Parents before children, as a runtime mounts them.
  const binds = [...system, ...view.binds].sort(
    (a, b) => a.target.split("/").length - b.target.split("/").length,
  );
  const lines = ["set -e", `mount --bind ${root} ${root}`];
  for (const b of binds) {
    const at = quote(join(view.root, b.target));
    const file = existsSync(b.source) && !lstatSync(b.source).isDirectory();
    lines.push(
      file ? `mkdir -p "$(dirname ${at})"; [ -e ${at} ] || : > ${at}` : `mkdir -p ${at}`,
      // Recursive: a bind of the network namespaces' dir brings each namespace's own mount.
      `mount --rbind ${quote(b.source)} ${at}`,
    );
  }
  for (const b of binds.filter((x) => x.readOnly))
    lines.push(`mount -o remount,bind,ro ${quote(join(view.root, b.target))}`);
  if (view.readOnlyRoot) lines.push(`mount -o remount,bind,ro ${root}`);
  lines.push(`exec chroot ${root} ${argv.map(quote).join(" ")}`);
  return lines.join("\n");
}

/**
 * Runs `argv` (paths as the view sees them) in `view`, with exactly `env`. Asynchronous: a fake
 * API server in the test's own process must be able to answer it.
 */
export function runInView(
  view: View,
  argv: readonly string[],
  options: { env: Record<string, string>; input?: string; timeoutMs?: number },
): Promise<ViewResult> {
  const script = viewScript(view, argv);
  const child = spawn("unshare", ["--mount", "--propagation", "private", "sh", "-c", script], {
    // PATH finds the tools that build the view; the process in it gets the same environment.
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", ...options.env },
    cwd: "/",
    stdio: ["pipe", "pipe", "pipe"],
    timeout: options.timeoutMs ?? 30_000,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  child.stdin.end(options.input ?? "");
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, stdout, stderr }));
  });
}
