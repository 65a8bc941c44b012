// What the soak runs in: host bridges, a temp root (cniDir, host-local's dataDir, confDir, a bin
// dir whose `bridge` is a wrapper that misbehaves as the fault file says), the fake API server
// (HTTPS) with pods of 0–4 extra networks, and `dist/plexus daemon`. Everything it makes is
// tracked and removed by cleanup(), which is synchronous so it also runs from a signal handler.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { killPids, ownedProcesses, sleep } from "./proc.mjs";

export const PLEXUS = resolve(import.meta.dirname, "../../dist/plexus");
const CNI_BIN = "/usr/lib/cni";
const NODE_NAME = "soak-node";
export const NAMESPACE = "soak";
export const MAX_EXTRA = 4;
/**
 * Each world's cniDir: a tmpfs this big (records, results and locks of one container at a time).
 */
const CNI_DIR_BYTES = 4 * 1024 * 1024;
/** Worlds not yet cleaned up: each one's accounting leaves the others' processes alone. */
const live = new Set();

/**
 * The delegate every network uses: /usr/lib/cni/bridge, unless a line `<ifname> <COMMAND> <mode>
 * <before|after> <arg>` of the fault file matches this call. No fd redirections around the exec:
 * the delegate must keep every descriptor Plexus gave it (the per-container lock is one).
 * Modes: sleep, hang, crash, garbage (ADD faults); setsid (a grandchild in its own session runs
 * bridge with this call's config after <arg> seconds, while the delegate hangs); fail (an error,
 * before or after bridge); nonidem (bridge, then every later call for this attachment fails, as a
 * plugin whose DEL fails once its state is gone); sleeponce (sleeps <arg> seconds on the first call
 * for this attachment only, then bridge). Per-attachment state goes to stateDir, outside cniDir.
 */
function wrapperScript(faultFile, stateDir) {
  return `#!/bin/sh
B=${CNI_BIN}/bridge
L=$(grep -s "^$CNI_IFNAME $CNI_COMMAND " '${faultFile}' | head -n 1)
[ -n "$L" ] || exec $B
set -- $L
S='${stateDir}'/$CNI_CONTAINERID-$CNI_IFNAME
case "$3" in
  sleep) sleep "$5"; exec $B ;;
  hang) [ "$4" = after ] && $B >/dev/null; exec sleep 120 ;;
  crash) [ "$4" = after ] && $B >/dev/null; kill -SEGV $$ ;;
  garbage) [ "$4" = after ] && $B >/dev/null
    printf '{"cniVersion":"1.0.0","interfaces":[{"na'; exit 0 ;;
  setsid) cat > "$S.conf"; setsid sh -c "sleep $5; exec $B < '$S.conf'" & exec sleep 120 ;;
  fail) [ "$4" = after ] && $B >/dev/null
    printf '{"cniVersion":"1.0.0","code":999,"msg":"soak: injected failure"}'; exit 1 ;;
  nonidem) if [ -e "$S.gone" ]; then
      printf '{"cniVersion":"1.0.0","code":999,"msg":"Link missing"}'; exit 1
    fi
    touch "$S.gone"; exec $B ;;
  sleeponce) [ -e "$S.slept" ] || { touch "$S.slept"; sleep "$5"; }; exec $B ;;
esac
exec $B
`;
}

function ip(args) {
  return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function ipQuiet(args) {
  try {
    execFileSync("ip", args, { stdio: "ignore" });
  } catch {}
}

function socketStatus(socketPath, path) {
  return new Promise((done) => {
    const req = request({ socketPath, path, timeout: 1000 }, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.on("error", () => done(0));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

export const ifName = (slot) => (slot === 0 ? "eth0" : `net${slot}`);
const networkName = (slot) => (slot === 0 ? "cbr0" : `net${slot}`);

/**
 * Lane 0 uses 10.230–10.234, lane 1 10.235–10.239, lane 2 10.230–… again: no network is a gateway,
 * so the host has no address or route in any of them and two lanes' equal subnets (on their own
 * bridges, in their own namespaces and host-local stores) cannot meet.
 */
const subnet = (lane, slot) => `10.${230 + ((lane * (MAX_EXTRA + 1) + slot) % 10)}.0.0/16`;

function networkConf(world, index) {
  return {
    cniVersion: "1.0.0",
    name: networkName(index),
    type: "bridge",
    bridge: world.bridges[index],
    isGateway: false,
    ipam: { type: "host-local", subnet: subnet(world.lane, index), dataDir: world.dataDir },
  };
}

function writeFiles(world) {
  for (const d of [world.binDir, world.confDir]) mkdirSync(d, { recursive: true });
  mkdirSync(world.stateDir, { recursive: true });
  writeFileSync(join(world.binDir, "bridge"), wrapperScript(world.faultFile, world.stateDir), {
    mode: 0o755,
  });
  symlinkSync(join(CNI_BIN, "host-local"), join(world.binDir, "host-local"));
  writeFileSync(join(world.confDir, "10-cbr0.conf"), JSON.stringify(networkConf(world, 0)));
}

function seedApi(world) {
  const { api } = world;
  for (let k = 1; k <= MAX_EXTRA; k++)
    api.addNad({
      metadata: { namespace: NAMESPACE, name: networkName(k) },
      spec: { config: JSON.stringify(networkConf(world, k)) },
    });
  for (let k = 0; k <= MAX_EXTRA; k++) {
    const nets = Array.from({ length: k }, (_, j) => networkName(j + 1)).join(",");
    api.addPod({
      metadata: {
        namespace: NAMESPACE,
        name: `p${k}`,
        uid: `uid-p${k}`,
        annotations: nets ? { "k8s.v1.cni.cncf.io/networks": nets } : {},
      },
      spec: { nodeName: NODE_NAME },
    });
  }
}

function plexusConfs(world) {
  const base = {
    cniVersion: "1.0.0",
    name: "plexus-soak",
    type: "plexus",
    cniDir: world.cniDir,
    clusterNetwork: join(world.confDir, "10-cbr0.conf"),
    confDir: world.confDir,
    kubeconfig: world.kubeconfig,
    // Short deadlines keep a faulted cycle short; they are what the faults run into.
    delegateTimeoutSeconds: 1,
    apiRequestTimeoutSeconds: 0.5,
    apiTotalTimeoutSeconds: 3,
  };
  const thin = { ...base, daemonSocket: "" };
  return {
    thin: JSON.stringify(thin),
    daemon: JSON.stringify({ ...base, daemonSocket: world.socket, daemonTimeoutMilliseconds: 300 }),
    // Slow DELs run into a short DEL deadline, shared between the networks.
    delDeadline: JSON.stringify({ ...thin, delTimeoutSeconds: 2 }),
    // A runtime that calls DEL once: the record of its failed DEL is abandoned by the next DEL.
    delOnce: JSON.stringify({ ...thin, failedDelRetrySeconds: 0 }),
  };
}

/** Builds the world; on any failure what was made is removed before the error propagates. */
export async function createWorld({ lane = 0 } = {}) {
  const tag = randomBytes(2).toString("hex");
  const root = mkdtempSync(join(tmpdir(), "plx-soak-"));
  const world = {
    tag,
    root,
    lane,
    binDir: join(root, "bin"),
    cniDir: join(root, "cni"),
    dataDir: join(root, "ipam"),
    confDir: join(root, "net.d"),
    faultFile: join(root, "fault"),
    stateDir: join(root, "state"),
    socket: join(root, "plexus.sock"),
    marker: `PLX_SOAK_MARK=${randomBytes(8).toString("hex")}`,
    bridges: Array.from({ length: MAX_EXTRA + 1 }, (_, k) => `plxs${tag}${k}`),
    netns: new Set(),
    daemon: undefined,
    daemonStderr: "",
    api: undefined,
    cleaned: false,
  };
  Object.assign(world, methods(world));
  live.add(world);
  try {
    for (const b of world.bridges) {
      ip(["link", "add", b, "type", "bridge"]);
      ip(["link", "set", b, "up"]);
    }
    // cniDir is a small tmpfs of its own, so that a cycle can fill it (the full-cnidir fault).
    mkdirSync(world.cniDir, { recursive: true });
    execFileSync("mount", [
      "-t",
      "tmpfs",
      "-o",
      `size=${CNI_DIR_BYTES},mode=0700`,
      "tmpfs",
      world.cniDir,
    ]);
    world.mounted = true;
    writeFiles(world);
    const { startFakeApiServer, writeKubeconfig } = await import(
      "../../test/support/fake-apiserver.ts"
    );
    world.api = await startFakeApiServer({ node: NODE_NAME });
    seedApi(world);
    world.kubeconfig = writeKubeconfig(world.api, { dir: root });
    world.confs = plexusConfs(world);
    await world.startDaemon({ waitReady: true });
  } catch (err) {
    world.cleanup();
    throw err;
  }
  return world;
}

function methods(world) {
  const [markName, markValue] = world.marker.split("=");
  return {
    /** The environment of one dist/plexus call, as a runtime gives it. */
    env(command, { containerId, netns, pod }) {
      return {
        PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
        [markName]: markValue,
        CNI_COMMAND: command,
        CNI_CONTAINERID: containerId,
        CNI_NETNS: netns,
        CNI_IFNAME: "eth0",
        CNI_PATH: world.binDir,
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NAMESPACE};K8S_POD_NAME=${pod};K8S_POD_UID=uid-${pod}`,
      };
    },
    addNetns(name) {
      world.netns.add(name);
      ip(["netns", "add", name]);
      ip(["-n", name, "link", "set", "lo", "up"]);
      return `/var/run/netns/${name}`;
    },
    deleteNetns(name) {
      ipQuiet(["netns", "del", name]);
      world.netns.delete(name);
    },
    ...fileMethods(world),
    ...daemonMethods(world),
    processes() {
      const exclude = new Set([...live].map((w) => w.daemon?.pid).filter(Boolean));
      const foreign = [...live].filter((w) => w !== world).map((w) => w.marker);
      return ownedProcesses(world.marker, { exclude, foreign });
    },
    /** Removes everything the soak made (cleanupWorld). */
    cleanup() {
      cleanupWorld(world);
    },
  };
}

/** The world's files a fault or a cycle changes: cniDir's fill, the state dir, the fault file. */
function fileMethods(world) {
  return {
    /** Fills cniDir (its tmpfs) to the last byte; unfill() gives the space back. */
    fillCniDir() {
      const filler = join(world.cniDir, ".filler");
      try {
        writeFileSync(filler, Buffer.alloc(CNI_DIR_BYTES));
      } catch (err) {
        if (err.code !== "ENOSPC") throw err;
      }
    },
    unfillCniDir() {
      rmSync(join(world.cniDir, ".filler"), { force: true });
    },
    clearState() {
      rmSync(world.stateDir, { recursive: true, force: true });
      mkdirSync(world.stateDir, { recursive: true });
    },
    setFault(lines) {
      writeFileSync(world.faultFile, lines.map((l) => `${l}\n`).join(""));
    },
  };
}

/** Starting the world's `plexus daemon` and killing it as a crash would. */
function daemonMethods(world) {
  return {
    async startDaemon({ waitReady = false } = {}) {
      const d = spawn(
        PLEXUS,
        [
          "daemon",
          "--kubeconfig",
          world.kubeconfig,
          "--node-name",
          NODE_NAME,
          "--socket",
          world.socket,
          "--log-level",
          "warn",
        ],
        { stdio: ["ignore", "ignore", "pipe"] },
      );
      d.stderr.on("data", (c) => (world.daemonStderr = (world.daemonStderr + c).slice(-4000)));
      world.daemon = d;
      if (!waitReady) return;
      const end = Date.now() + 30_000;
      while ((await socketStatus(world.socket, "/readyz")) !== 200) {
        if (d.exitCode !== null)
          throw new Error(`plexus daemon exited (${d.exitCode}): ${world.daemonStderr}`);
        if (Date.now() > end)
          throw new Error(`plexus daemon not ready after 30 s: ${world.daemonStderr}`);
        await sleep(20);
      }
    },
    /** SIGKILL, as the kubelet's OOM killer or a node crash would; resolves once it is reaped. */
    killDaemon() {
      const d = world.daemon;
      world.daemon = undefined;
      if (!d || d.exitCode !== null || d.signalCode !== null) return Promise.resolve();
      return new Promise((done) => {
        d.once("exit", () => done());
        d.kill("SIGKILL");
      });
    },
  };
}

/** Removes everything the soak made; idempotent, synchronous (also runs from signal handlers). */
function cleanupWorld(world) {
  if (world.cleaned) return;
  world.cleaned = true;
  live.delete(world);
  try {
    world.daemon?.kill("SIGKILL");
  } catch {}
  const others = [...live];
  killPids(
    ownedProcesses(world.marker, {
      foreign: others.map((w) => w.marker),
      exclude: new Set(others.map((w) => w.daemon?.pid)),
    }).map((p) => p.pid),
  );
  world.api?.close().catch(() => {});
  for (const n of [...world.netns]) world.deleteNetns(n);
  for (const b of world.bridges) ipQuiet(["link", "del", b]);
  if (world.mounted)
    try {
      execFileSync("umount", ["-l", world.cniDir], { stdio: "ignore" });
    } catch {}
  rmSync(world.root, { recursive: true, force: true });
}
