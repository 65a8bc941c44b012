/**
 * Whether an interface name is taken in a pod's network namespace: the delegate gate asks before
 * an attachment's first plugin runs (src/gate/gate.ts), so that what a DEL later removes under that
 * name is what the attachment created. The executable asks the kernel from inside the namespace
 * (setns(2) of this thread, if_nametoindex, setns back); under Node (development, unit tests)
 * the node's `nsenter` and `ip` answer.
 */
import { closeSync, constants, openSync } from "node:fs";
import { CniError, Code } from "../cni/errors";
import { libc, type Libc } from "../sys/libc";
import { findTool } from "./tools";

const CLONE_NEWNET = 0x40000000;
const IP_TIMEOUT_MS = 5000;

export async function linkExists(netns: string, name: string): Promise<boolean> {
  const lib = libc();
  return lib ? linkExistsLibc(lib, netns, name) : linkExistsWithTools(netns, name);
}

function linkExistsLibc(lib: Libc, netns: string, name: string): boolean {
  const self = openSync("/proc/thread-self/ns/net", constants.O_RDONLY);
  let target: number | undefined;
  try {
    target = openSync(netns, constants.O_RDONLY);
    if (lib.setns(target, CLONE_NEWNET) !== 0) throw cannotLook(netns, `errno ${lib.errno()}`);
    const index = lib.if_nametoindex(Buffer.from(`${name}\0`));
    // Back to the node's namespace before anything else runs on this thread.
    if (lib.setns(self, CLONE_NEWNET) !== 0)
      throw new Error(`cannot return to the node's network namespace (errno ${lib.errno()})`);
    return index !== 0;
  } finally {
    closeSync(self);
    if (target !== undefined) closeSync(target);
  }
}

function linkExistsWithTools(netns: string, name: string): Promise<boolean> {
  const { spawn } = process.getBuiltinModule("node:child_process");
  const args = [`--net=${netns}`, findTool("ip"), "-o", "link", "show", "dev", name];
  return new Promise((resolve, reject) => {
    const child = spawn(findTool("nsenter"), args, {
      env: {},
      stdio: ["ignore", "ignore", "pipe"],
      timeout: IP_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    child.on("error", (err) => reject(cannotLook(netns, err.message)));
    child.on("close", (code) => {
      if (code === 0) resolve(true);
      else if (/does not exist|cannot find device/i.test(stderr)) resolve(false);
      else reject(cannotLook(netns, stderr.trim() || `ip exited ${code}`));
    });
  });
}

function cannotLook(netns: string, why: string): CniError {
  return new CniError(
    Code.InvalidEnv,
    `cannot list the interfaces of CNI_NETNS ${JSON.stringify(netns)} (${why}); nothing was run`,
  );
}
