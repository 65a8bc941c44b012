#!/usr/bin/env node
/**
 * The README's demo (`sudo npm run demo`, through scripts/demo.sh): Plexus's main job on this
 * machine with the real reference plugins from /usr/lib/cni, no cluster needed.
 *
 * A network namespace stands in for a pod sandbox. Plexus is run as a runtime runs it (CNI_*
 * environment, its config on stdin) with three delegates: the default network (bridge +
 * host-local, eth0), a second bridge network (net1) and a macvlan network over a host veth
 * (net2). The demo prints the ADD result and what the namespace then holds, runs DEL, and shows
 * that nothing is left. Everything it creates is removed at the end, also when a step fails.
 *
 * Built from small exported pieces (DemoHost, plexusConfig, attach/detach, show*) so a later demo
 * (Kubernetes pods from a file-backed cluster) can reuse them. Plain JavaScript: it runs before
 * and without any TypeScript tooling.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { isIP } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const PLEXUS = join(REPO, "dist/plexus");
export const CNI_PATH = "/usr/lib/cni";
/** Delegates speak the plugins' newest version (containernetworking-plugins 1.1.x: 1.0.0). */
export const DELEGATE_VERSION = "1.0.0";

// ---------------------------------------------------------------------------------------------
// Output

const tty = process.stdout.isTTY;
const paint = (code, text) => (tty ? `\x1b[${code}m${text}\x1b[0m` : text);
export const say = {
  title: (s) => console.log(`\n${paint("1;36", `══ ${s} ══`)}`),
  section: (s) => console.log(`\n${paint("1", `── ${s}`)}`),
  line: (s = "") => console.log(`   ${s}`),
  block: (text) => console.log(text.replace(/\n$/, "").replace(/^/gm, "   ")),
  ok: (s) => console.log(`   ${paint("32", "✓")} ${s}`),
  bad: (s) => console.log(`   ${paint("31", "✗")} ${s}`),
};

/** JSON indented by level, but any object or list that fits on one line stays on one line. */
export function compactJson(value, indent = "", width = 96) {
  const flat = JSON.stringify(value);
  if (
    flat === undefined ||
    flat.length + indent.length <= width ||
    value === null ||
    typeof value !== "object"
  )
    return flat;
  const inner = `${indent}  `;
  if (Array.isArray(value))
    return `[\n${value.map((v) => inner + compactJson(v, inner, width)).join(",\n")}\n${indent}]`;
  const entries = Object.entries(value).map(
    ([k, v]) => `${inner}${JSON.stringify(k)}: ${compactJson(v, inner, width)}`,
  );
  return `{\n${entries.join(",\n")}\n${indent}}`;
}

// ---------------------------------------------------------------------------------------------
// Host plumbing: namespaces and links the demo makes, all removed by cleanup()

/** Runs a command; throws with its stderr when it fails (unless `allowFail`). */
export function run(cmd, args, { input, env, allowFail = false } = {}) {
  const r = spawnSync(cmd, args, { input, env, encoding: "utf8", timeout: 60_000 });
  if (r.error) throw new Error(`${cmd} ${args.join(" ")}: ${r.error.message}`);
  if (r.status !== 0 && !allowFail)
    throw new Error(
      `${cmd} ${args.join(" ")} failed (exit ${r.status}): ${(r.stderr || r.stdout).trim()}`,
    );
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export const ip = (...args) => run("ip", args).stdout;
export const ipJson = (...args) => JSON.parse(ip("-j", ...args) || "[]");

export class DemoHost {
  constructor() {
    this.tag = randomBytes(2).toString("hex");
    this.root = mkdtempSync(join(tmpdir(), "plx-demo-"));
    /** Plexus's records and the delegates' result cache. */
    this.cniDir = join(this.root, "cni");
    /** host-local's reservations. */
    this.dataDir = join(this.root, "ipam");
    this.namespaces = [];
    this.links = [];
    this.bridges = [];
  }

  /** A network namespace standing in for a pod sandbox: the path is what CNI_NETNS gets. */
  addNamespace(label) {
    const name = `plx-demo-${label}-${this.tag}`;
    ip("netns", "add", name);
    this.namespaces.push(name);
    ip("-n", name, "link", "set", "lo", "up");
    return { name, path: `/var/run/netns/${name}` };
  }

  /** A bridge name for the bridge plugin to create (≤ 15 bytes). */
  bridgeName(index) {
    const name = `plxd${this.tag}b${index}`;
    this.bridges.push(name);
    return name;
  }

  /** A host veth pair, up: one end is the macvlan master (a NIC would be on a real node). */
  addVethPair() {
    const a = `plxd${this.tag}v0`;
    const b = `plxd${this.tag}v1`;
    this.links.push(a);
    ip("link", "add", a, "type", "veth", "peer", "name", b);
    ip("link", "set", a, "up");
    ip("link", "set", b, "up");
    return a;
  }

  /** Removes everything the demo made; never throws. */
  cleanup() {
    const done = [];
    for (const ns of this.namespaces)
      if (
        existsSync(`/var/run/netns/${ns}`) &&
        run("ip", ["netns", "del", ns], { allowFail: true }).code === 0
      )
        done.push(`namespace ${ns}`);
    for (const l of [...this.bridges, ...this.links])
      if (run("ip", ["link", "del", l], { allowFail: true }).code === 0) done.push(`link ${l}`);
    rmSync(this.root, { recursive: true, force: true });
    done.push(`temp dir ${this.root}`);
    return done;
  }
}

// ---------------------------------------------------------------------------------------------
// Plexus's config and calls

/**
 * Plexus's own config (the Multus thin config): three inline delegates. The first is the
 * default network (CNI_IFNAME, eth0); the others get net1 and net2.
 */
export function plexusConfig(host, { macvlanMaster }) {
  const hostLocal = (subnet, extra = {}) => ({
    type: "host-local",
    dataDir: host.dataDir,
    subnet,
    ...extra,
  });
  return {
    cniVersion: "1.0.0",
    name: "plexus-demo",
    type: "plexus",
    cniDir: host.cniDir,
    delegates: [
      {
        cniVersion: DELEGATE_VERSION,
        name: "cluster-net",
        type: "bridge",
        bridge: host.bridgeName(0),
        isGateway: true,
        ipam: hostLocal("10.240.0.0/24", { routes: [{ dst: "0.0.0.0/0" }] }),
      },
      {
        cniVersion: DELEGATE_VERSION,
        name: "storage-net",
        type: "bridge",
        bridge: host.bridgeName(1),
        ipam: hostLocal("10.240.1.0/24"),
      },
      {
        cniVersion: DELEGATE_VERSION,
        name: "macvlan-net",
        type: "macvlan",
        master: macvlanMaster,
        mode: "bridge",
        ipam: hostLocal("10.240.2.0/24"),
      },
    ],
  };
}

/** One Plexus call, as a runtime makes it: CNI_* environment, config on stdin, result on stdout. */
export function callPlexus(command, conf, cniEnv = {}) {
  const env = {
    PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
    CNI_COMMAND: command,
    CNI_PATH,
    ...cniEnv,
  };
  const r = run(PLEXUS, [], { input: JSON.stringify(conf), env, allowFail: true });
  return { ...r, json: r.stdout.trim() ? JSON.parse(r.stdout) : undefined };
}

/** ADD a container (sandbox) to every network of the config; throws with Plexus's CNI error. */
export function attach(conf, { containerId, netns, ifName = "eth0" }) {
  const r = callPlexus("ADD", conf, {
    CNI_CONTAINERID: containerId,
    CNI_NETNS: netns.path,
    CNI_IFNAME: ifName,
  });
  if (r.code !== 0)
    throw new Error(`ADD failed (exit ${r.code}): ${r.stdout.trim()} ${r.stderr.trim()}`);
  return r.json;
}

/** DEL a container; DEL prints nothing on success (CNI spec). */
export function detach(conf, { containerId, netns, ifName = "eth0" }) {
  const r = callPlexus("DEL", conf, {
    CNI_CONTAINERID: containerId,
    CNI_NETNS: netns ? netns.path : "",
    CNI_IFNAME: ifName,
  });
  if (r.code !== 0)
    throw new Error(`DEL failed (exit ${r.code}): ${r.stdout.trim()} ${r.stderr.trim()}`);
  return r;
}

// ---------------------------------------------------------------------------------------------
// What is there

function files(dir) {
  const out = [];
  const visit = (d) => {
    if (!existsSync(d)) return;
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) visit(p);
      else out.push(relative(dir, p));
    }
  };
  visit(dir);
  return out.sort();
}

/**
 * host-local reservation files (`<network>/<ip>`); its lock and last-reserved files are not
 * reservations.
 */
export const ipReservations = (host) =>
  files(host.dataDir).filter((p) => isIP(p.split("/").pop()) !== 0);
export const records = (host) => files(join(host.cniDir, "records"));
export const cachedResults = (host) => files(join(host.cniDir, "results"));

export function showNamespace(netns) {
  say.line(`$ ip -n ${netns.name} -br addr`);
  say.block(ip("-n", netns.name, "-br", "addr"));
  say.line(`$ ip -n ${netns.name} route`);
  say.block(ip("-n", netns.name, "route") || "(no routes)");
}

export function showHostState(host) {
  const ports = host.bridges
    .filter((br) => run("ip", ["link", "show", br], { allowFail: true }).code === 0)
    .flatMap((br) => ipJson("link", "show", "master", br).map((l) => `${l.ifname}@${br}`));
  say.line(`host ends of the veths: ${ports.join(", ") || "none"}`);
  say.line(`records (${join(host.cniDir, "records")}): ${records(host).join(", ") || "none"}`);
  say.line(
    `cached results (${join(host.cniDir, "results")}): ` +
      `${cachedResults(host).join(", ") || "none"}`,
  );
  say.line(`IP reservations (${host.dataDir}): ${ipReservations(host).join(", ") || "none"}`);
}

/** Everything a container's attachments could leave; each entry is a problem. */
export function leftovers(host, netns) {
  const out = [];
  const nsLinks = ipJson("-n", netns.name, "link", "show")
    .map((l) => l.ifname)
    .filter((n) => n !== "lo");
  if (nsLinks.length) out.push(`interfaces in ${netns.name}: ${nsLinks.join(", ")}`);
  for (const br of host.bridges) {
    if (run("ip", ["link", "show", br], { allowFail: true }).code !== 0) continue;
    const ports = ipJson("link", "show", "master", br).map((l) => l.ifname);
    if (ports.length) out.push(`host veths on ${br}: ${ports.join(", ")}`);
  }
  if (ipReservations(host).length) out.push(`IP reservations: ${ipReservations(host).join(", ")}`);
  if (records(host).length) out.push(`records: ${records(host).join(", ")}`);
  if (cachedResults(host).length) out.push(`cached results: ${cachedResults(host).join(", ")}`);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The demo

export function preflight() {
  if (process.getuid?.() !== 0)
    throw new Error("run as root (sudo npm run demo): network namespaces need it");
  if (!existsSync(PLEXUS))
    throw new Error(`${PLEXUS} is missing: build it with \`npm run -s build\``);
  for (const p of ["bridge", "host-local", "macvlan"])
    if (!existsSync(join(CNI_PATH, p)))
      throw new Error(`${CNI_PATH}/${p} is missing: install containernetworking-plugins`);
}

/**
 * Runs a demo body with a fresh {@link DemoHost}: preflight, cleanup of everything the host made
 * (also on failure and on SIGINT/SIGTERM), and the closing verdict. `body` returns true when
 * nothing was left behind.
 */
export async function withDemoHost(title, body) {
  preflight();
  const host = new DemoHost();
  const onSignal = () => {
    say.line("interrupted: cleaning up");
    host.cleanup();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let ok = false;
  try {
    say.title(title);
    ok = await body(host);
  } catch (err) {
    say.bad(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    say.section("Cleanup (the demo's own namespaces, bridges, veth and temp dir)");
    say.line(host.cleanup().join(", "));
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  say.title(ok ? "Demo OK" : "Demo FAILED");
  return ok;
}

/**
 * Runs `fn` when the file at `metaUrl` is the script node was started with; exit 0 when it returns
 * true.
 */
export function runIfMain(metaUrl, fn) {
  if (!process.argv[1] || metaUrl !== pathToFileURL(resolve(process.argv[1])).href) return;
  fn().then(
    (ok) => process.exit(ok ? 0 : 1),
    (err) => {
      console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}

export function demo() {
  return withDemoHost(
    "Plexus demo: one container, three networks, the reference CNI plugins",
    async (host) => {
      say.section("1. Setup");
      const netns = host.addNamespace("pod");
      const master = host.addVethPair();
      const conf = plexusConfig(host, { macvlanMaster: master });
      const container = { containerId: `demo-${host.tag}`, netns };
      say.line(`namespace (the pod sandbox): ${netns.path}`);
      say.line(`macvlan master (host veth):  ${master}`);
      say.line(`Plexus state (cniDir):       ${host.cniDir}`);
      say.line(`plugins (CNI_PATH):          ${CNI_PATH}`);

      say.section('2. Plexus\'s config, given on stdin (the Multus thin config, type "plexus")');
      say.block(compactJson(conf));

      say.section(
        `3. ADD  CNI_COMMAND=ADD CNI_CONTAINERID=${container.containerId} CNI_IFNAME=eth0 ` +
          `CNI_NETNS=${netns.path}`,
      );
      const t0 = performance.now();
      const result = attach(conf, container);
      say.line(
        `exit 0 in ${Math.round(performance.now() - t0)} ms; stdout, the default network's ` +
          `result:`,
      );
      say.block(compactJson(result));

      say.section(
        "4. Inside the namespace: eth0 (cluster-net), net1 (storage-net), net2 (macvlan-net)",
      );
      showNamespace(netns);
      say.line();
      showHostState(host);

      say.section("5. DEL  CNI_COMMAND=DEL (same container)");
      const del = detach(conf, container);
      say.line(
        `exit ${del.code}, stdout ` +
          `${del.stdout === "" ? "empty (as the CNI spec asks)" : JSON.stringify(del.stdout)}`,
      );

      say.section("6. What is left");
      showNamespace(netns);
      showHostState(host);
      const left = leftovers(host, netns);
      if (left.length === 0)
        say.ok(
          "nothing: no interface in the namespace, no host veth, no IP reservation, no record, " +
            "no cached result",
        );
      else for (const l of left) say.bad(l);
      return left.length === 0;
    },
  );
}

runIfMain(import.meta.url, demo);
