// Records which functions a CNI call runs, in order, so that `bun build --bytecode-order` lays
// their bytecode out together at the start: a call then touches fewer pages of the executable
// (what that saves: docs/benchmarks.md, "Levers, measured"). The
// recording is a real ADD, CHECK and DEL of a pod with two NAD networks, made by the executable
// `exe` against the project's fake API server over HTTPS, as thin mode makes it on a node, plus a
// VERSION. The delegate is a shell script that answers without touching any network, so the
// recording needs no CNI plugin; it runs at every build, so the layout follows the code. Plexus
// refuses its own network namespace as a pod's, so the calls get a namespace of their own from
// `unshare` (as root, or in a user namespace); where neither can be made (a container build
// without the privilege), ADD and CHECK are refused early and the layout is recorded from what
// they ran, with a warning.
import { execFile, execFileSync, spawn } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { importFakeApiServer, nodeKubeconfig } from "./bench/lib.mjs";
import { compileArgs } from "./build-flags.mjs";

/** Where the build keeps the record (dist/plexus's and the release executables' layout). */
const ORDER_DIR = fileURLToPath(new URL("../dist/bytecode-order", import.meta.url));

/**
 * Compiles `entry` for the host without a layout, records its calls and keeps the record in
 * ORDER_DIR; returns the order files to compile every executable of this bundle with.
 */
export async function recordLayout({ bun, entry }) {
  const scratch = mkdtempSync(join(tmpdir(), "plx-bytecode-order-"));
  try {
    const exe = join(scratch, "plexus-unordered");
    execFileSync(bun, compileArgs({ entry, outfile: exe }), {
      stdio: ["ignore", "ignore", "inherit"],
    });
    const recorded = await recordBytecodeOrder({ exe, dir: scratch });
    rmSync(ORDER_DIR, { recursive: true, force: true });
    mkdirSync(ORDER_DIR, { recursive: true });
    return recorded.map((f) => {
      copyFileSync(f, join(ORDER_DIR, basename(f)));
      return join(ORDER_DIR, basename(f));
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const NOOP_DELEGATE = `#!/bin/sh
# A CNI delegate that touches nothing: a result for ADD, nothing for CHECK and DEL.
cat >/dev/null
case "$CNI_COMMAND" in
  ADD) printf '{"cniVersion":"1.0.0","interfaces":[{"name":"%s","sandbox":"%s"}],' \
         "$CNI_IFNAME" "$CNI_NETNS"
       printf '"ips":[{"address":"10.99.0.2/24","interface":0}]}' ;;
  VERSION) printf '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}' ;;
esac
`;

/**
 * Runs the calls with `exe` in `dir` (made empty by the caller); returns the order files, most
 * important first.
 */
async function recordBytecodeOrder({ exe, dir }) {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "noop"), NOOP_DELEGATE);
  chmodSync(join(bin, "noop"), 0o755);
  const { startFakeApiServer } = await importFakeApiServer();
  const api = await startFakeApiServer({ node: "train-node" });
  try {
    const nad = (name) => ({
      metadata: { namespace: "train", name },
      spec: { config: JSON.stringify({ cniVersion: "1.0.0", type: "noop" }) },
    });
    api.addNad(nad("net-a"));
    api.addNad(nad("net-b"));
    api.addPod({
      metadata: {
        namespace: "train",
        name: "p",
        uid: "u",
        annotations: { "k8s.v1.cni.cncf.io/networks": "net-a,net-b" },
      },
      spec: { nodeName: "train-node" },
    });
    const conf = JSON.stringify({
      cniVersion: "1.0.0",
      name: "plexus",
      type: "plexus",
      kubeconfig: await nodeKubeconfig(api, { dir }),
      cniDir: join(dir, "cni"),
      daemonSocket: "",
      delegates: [{ cniVersion: "1.0.0", name: "default", type: "noop" }],
    });
    const order = (command) => join(dir, `order-${command.toLowerCase()}.txt`);
    const pod = await podNamespace();
    try {
      // Run in a pod's life order (CHECK needs the ADD's record); laid out ADD and DEL first.
      for (const command of ["VERSION", "ADD", "CHECK", "DEL"]) {
        const vars = { BUN_BYTECODE_ORDER_OUT: order(command), CNI_PATH: bin, CNI_NETNS: pod.path };
        await call(exe, command, conf, vars).catch((err) => {
          if (pod.own && command !== "DEL")
            process.stderr.write(`bytecode-order: ${err.message}\n`);
          else throw err;
        });
      }
    } finally {
      pod.stop();
    }
    return ["ADD", "DEL", "CHECK", "VERSION"].map(order);
  } finally {
    await api.close();
  }
}

/**
 * A network namespace for the recorded calls, held by a `sleep` in it: `unshare --net` as root,
 * else in a user namespace of its own. Neither possible: this process's own, which Plexus refuses
 * for ADD and CHECK (`own`).
 */
async function podNamespace() {
  const self = readlinkSync("/proc/self/ns/net");
  for (const flags of [["--net"], ["--net", "--map-root-user"]]) {
    const holder = spawn("unshare", [...flags, "--", "sleep", "600"], { stdio: "ignore" });
    holder.on("error", () => {});
    const path = `/proc/${holder.pid}/ns/net`;
    for (let i = 0; i < 100 && holder.exitCode === null; i++) {
      let now;
      try {
        now = readlinkSync(path);
      } catch {
        break;
      }
      if (now !== self) return { path, own: false, stop: () => holder.kill("SIGKILL") };
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    holder.kill("SIGKILL");
  }
  process.stderr.write("bytecode-order: no namespace could be made; ADD and CHECK are refused\n");
  return { path: "/proc/self/ns/net", own: true, stop: () => {} };
}

/** One CNI call; asynchronous, as the fake API server answering it runs in this process. */
function call(exe, command, conf, vars) {
  const env = {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    CNI_COMMAND: command,
    CNI_CONTAINERID: "bytecode-order",
    CNI_IFNAME: "eth0",
    CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=train;K8S_POD_NAME=p;K8S_POD_UID=u",
    ...vars,
  };
  return new Promise((resolve, reject) => {
    const child = execFile(exe, [], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      if (!err) return resolve();
      reject(
        new Error(
          `recording the bytecode order: ${command} failed (${err.code ?? err.signal}): ` +
            `${stdout}${stderr}`,
        ),
      );
    });
    child.stdin.end(conf);
  });
}
