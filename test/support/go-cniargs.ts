/**
 * Go's own reading of CNI_ARGS (M17): test/support/go/cniargs, built offline with the machine's
 * `go` against the libcni that Multus v4.0.2 vendors (its source snapshot,
 * ../shared/peers/multus-cni-4.0.2.tar.gz, or MULTUS_TARBALL). Only go.mod, vendor/modules.txt
 * and libcni are unpacked, into a temp dir removed after the build; the binary is cached in the OS
 * temp dir, keyed by the tarball's and main.go's hashes. Nothing of Multus enters the repository.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./plexus-bin";

const MULTUS_TARBALL =
  process.env.MULTUS_TARBALL ?? join(REPO_ROOT, "..", "shared", "peers", "multus-cni-4.0.2.tar.gz");
const MAIN_GO = join(REPO_ROOT, "test/support/go/cniargs/main.go");
const TOP = "multus-cni-4.0.2";
/** What the build reads of the snapshot: the module files and the vendored libcni. */
const MEMBERS = ["go.mod", "vendor/modules.txt", "vendor/github.com/containernetworking/cni"];

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/** Why the program cannot be built here, or undefined when it can. */
export function goCniArgsUnavailable(): string | undefined {
  if (spawnSync("go", ["version"]).status !== 0) return "`go` is not on PATH (Debian's golang-go)";
  if (!fs.existsSync(MULTUS_TARBALL)) return `no Multus source at ${MULTUS_TARBALL}`;
  return undefined;
}

/** The built program's path, built on first use and cached by content. */
export function buildGoCniArgs(): string {
  const tarball = fs.readFileSync(MULTUS_TARBALL);
  const key = sha256(sha256(tarball) + sha256(fs.readFileSync(MAIN_GO))).slice(0, 16);
  const cache = join(tmpdir(), "plexus-cniargs");
  const binary = join(cache, `cniargs-${key}`);
  if (fs.existsSync(binary)) return binary;
  fs.mkdirSync(cache, { recursive: true });
  const work = fs.mkdtempSync(join(cache, "build-"));
  try {
    execFileSync("tar", ["xzf", MULTUS_TARBALL, "-C", work, ...MEMBERS.map((m) => `${TOP}/${m}`)]);
    const src = join(work, TOP);
    fs.mkdirSync(join(src, "plexus-cniargs"));
    fs.copyFileSync(MAIN_GO, join(src, "plexus-cniargs/main.go"));
    // GOPROXY=off and GOTOOLCHAIN=local: never a download; the cache stays in the temp dir.
    const env = {
      ...process.env,
      GOFLAGS: "-mod=vendor",
      CGO_ENABLED: "0",
      GOCACHE: join(work, "gocache"),
      GOPATH: join(work, "gopath"),
      GOPROXY: "off",
      GOTOOLCHAIN: "local",
    };
    const out = join(work, "cniargs");
    execFileSync("go", ["build", "-o", out, "./plexus-cniargs"], {
      cwd: src,
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    fs.renameSync(out, binary);
    return binary;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** What LoadArgs set in Multus's K8sArgs; IP as Go prints it, "" when unset. */
export interface GoK8sArgs {
  IgnoreUnknown: boolean;
  IP: string;
  K8S_POD_NAME: string;
  K8S_POD_NAMESPACE: string;
  K8S_POD_INFRA_CONTAINER_ID: string;
  K8S_POD_UID: string;
}

/** Go's reading of each CNI_ARGS string, in order: its fields, or its error. */
export function goLoadArgs(
  binary: string,
  raws: readonly string[],
): Array<{ args: GoK8sArgs } | { error: string }> {
  const input = raws.map((raw) => `${JSON.stringify(raw)}\n`).join("");
  const out = execFileSync(binary, [], { input, maxBuffer: 64 << 20, encoding: "utf8" });
  return out
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}
