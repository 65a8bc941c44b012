/**
 * A real kubelet-like pod-resources server (M10): our grpc-go program
 * (test/support/go/podres-server/main.go), built offline inside an unpacked Multus source
 * snapshot (../shared/peers/multus-cni-4.0.2.tar.gz), whose vendor tree holds grpc-go and
 * kubelet's pod-resources v1 API. The build is cached in the temp dir, keyed by the tarball's and
 * main.go's hashes; the unpacked source is removed after it. Neither the source nor the binary is
 * ever written inside the repository.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { REPO_ROOT } from "./plexus-bin";

const run = promisify(execFile);
const MULTUS_TARBALL = resolve(REPO_ROOT, "../shared/peers/multus-cni-4.0.2.tar.gz");
const MAIN_GO = join(REPO_ROOT, "test/support/go/podres-server/main.go");
const GO = "/usr/bin/go";
/** The vendored packages main.go imports. */
const NEEDED = ["google.golang.org/grpc", "k8s.io/kubelet/pkg/apis/podresources/v1"];

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Why the server cannot be built here, or undefined when it can. */
export function goServerUnavailable(): string | undefined {
  if (!fs.existsSync(GO)) return `${GO} is missing (Debian's golang-go)`;
  if (!fs.existsSync(MULTUS_TARBALL)) return `${MULTUS_TARBALL} is missing`;
  return undefined;
}

/** The built server's path, built on first use and cached by content. */
export async function buildGoPodResServer(): Promise<string> {
  const tarball = fs.readFileSync(MULTUS_TARBALL);
  const key = sha256(Buffer.concat([Buffer.from(sha256(tarball)), fs.readFileSync(MAIN_GO)]));
  const cache = join(tmpdir(), "plexus-podres-server");
  const binary = join(cache, `podres-server-${key.slice(0, 16)}`);
  if (fs.existsSync(binary)) return binary;
  fs.mkdirSync(cache, { recursive: true });
  const work = fs.mkdtempSync(join(cache, "build-"));
  try {
    await run("tar", ["xzf", MULTUS_TARBALL, "-C", work]);
    const src = join(work, "multus-cni-4.0.2");
    const modules = fs.readFileSync(join(src, "vendor/modules.txt"), "utf8").split("\n");
    const absent = NEEDED.filter((pkg) => !modules.includes(pkg));
    if (absent.length) throw new Error(`${absent.join(", ")}: not in ${src}/vendor/modules.txt`);
    fs.mkdirSync(join(src, "plexus-podres-server"));
    fs.writeFileSync(join(src, "plexus-podres-server/main.go"), fs.readFileSync(MAIN_GO));
    const env = {
      ...process.env,
      GOFLAGS: "-mod=vendor",
      CGO_ENABLED: "0",
      GOCACHE: join(cache, "gocache"),
      GOPATH: join(cache, "gopath"),
      GOPROXY: "off",
    };
    const out = join(work, "podres-server");
    const options = { cwd: src, env, maxBuffer: 1 << 20 };
    await run(GO, ["build", "-o", out, "./plexus-podres-server"], options);
    fs.renameSync(out, binary);
    return binary;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

interface GoPodResServer {
  socket: string;
  /** The methods it served, in order ("List"; Get is not in this kubelet API). */
  calls: string[];
  close(): Promise<void>;
}

/** Pods as the server's JSON file holds them. */
export interface GoPod {
  namespace: string;
  name: string;
  containers: { name: string; devices: { resourceName: string; deviceIds: string[] }[] }[];
}

export async function startGoPodResServer(options: { binary: string; dir: string; pods: GoPod[] }) {
  const socket = join(options.dir, "kubelet.sock");
  const devices = join(options.dir, "devices.json");
  fs.writeFileSync(devices, JSON.stringify(options.pods));
  const child: ChildProcess = spawn(options.binary, ["-socket", socket, "-devices", devices], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const server: GoPodResServer = {
    socket,
    calls: [],
    close: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
  const ready = new Promise<void>((resolveReady, reject) => {
    child.once("exit", (code) => reject(new Error(`the Go pod-resources server exited (${code})`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      if (line === "ready") resolveReady();
      else if (line.startsWith("call ")) server.calls.push(line.slice(5));
    });
  });
  try {
    await ready;
  } catch (err) {
    await server.close();
    throw err;
  }
  return server;
}
