/**
 * Go's own encoding/json, for differential tests: builds test/support/go/jsonfold (stdlib only, no
 * network) into a temp dir with the machine's `go`. Without `go` a test skips outside CI and fails
 * under CI=true (as the e2e prerequisites do, netns.ts): Debian's golang-go provides it.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./plexus-bin";
import { isCi } from "./netns";

const SOURCE = join(REPO_ROOT, "test/support/go/jsonfold");

export interface GoJson {
  /** The built program: `fold`, `decode`, or a CNI plugin when run without arguments. */
  bin: string;
  dispose(): void;
}

/** Builds jsonfold; undefined (with the reason printed) when there is no Go outside CI. */
export function buildGoJson(): GoJson | undefined {
  try {
    execFileSync("go", ["version"], { stdio: "ignore" });
  } catch {
    const reason = "`go` is not on PATH (Debian package golang-go)";
    if (isCi()) throw new Error(`${reason}: CI=true, so a missing Go is a failure, not a skip`);
    console.warn(`\n*** SKIPPING the differential tests against Go: ${reason} ***\n`);
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), "plexus-jsonfold-"));
  const bin = join(dir, "jsonfold");
  // GOCACHE in the temp dir: no state outside it; GOTOOLCHAIN=local: never a download.
  const cache = join(dir, "cache");
  const env = { ...process.env, GOFLAGS: "-mod=mod", GOCACHE: cache, GOTOOLCHAIN: "local" };
  const stdio: Array<"ignore" | "inherit"> = ["ignore", "ignore", "inherit"];
  execFileSync("go", ["build", "-o", bin, "."], { cwd: SOURCE, env, stdio });
  rmSync(cache, { recursive: true, force: true });
  return { bin, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** What a Go plugin reads of a document: libcni's NetConf with the keys Plexus owns, and a map. */
export interface GoSeen {
  struct: {
    cniVersion?: string;
    name?: string;
    type?: string;
    capabilities?: Record<string, boolean>;
    ipam: { type?: string };
    prevResult?: Record<string, unknown>;
    runtimeConfig?: Record<string, unknown>;
    args?: { cni?: { ips?: unknown; mac?: unknown } };
  };
  map: Record<string, unknown>;
}

/** Go's decode of each document (one JSON a line): its view, or its error. */
export function goDecode(go: GoJson, docs: readonly string[]): Array<GoSeen | { error: string }> {
  const input = `${docs.join("\n")}\n`;
  const out = execFileSync(go.bin, ["decode"], { input, maxBuffer: 256 << 20 });
  return out
    .toString("utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}
