/**
 * The delegate gate, model-based (fast-check `fc.commands`, docs/security.md "Every path to a
 * delegate"): sequences of what tenants, the runtime and the node's own passes do to one pod,
 * each run against dist/plexus with real bridge and host-local in real namespaces (gate-node.ts),
 * with invariants checked after every step:
 *
 * 1. no plugin (or IPAM) type outside `allowedPluginTypes` ever ran (B86);
 * 2. the pod's `lo` and its `tap0` (with its address and host end), which Plexus did not create,
 *    are there whenever the pod's namespace is (B88);
 * 3. no record was dropped while its attachment exists: every interface Plexus made in a live
 *    namespace, and every host-local reservation, is named by a record (B86);
 * 4. no delegate was given a device key no allocation backs (B87).
 *
 * At the end of each run everything is repaired and torn down, and nothing may be left.
 *
 * The actions: a tenant edits a NAD (a refused type, a refused IPAM type, a chained refused
 * plugin, device keys in any Go spelling, another subnet, bridge, host-local store or network
 * name, `spec.config` removed while an administrator's conf file has the network's name) or the
 * pod's networks annotation (selections on `lo` and on `tap0`, a `deviceID`, a `hostPort`); the
 * runtime's ADD, DEL (repeated, and with CNI_NETNS="" once the namespace is gone), CHECK and GC;
 * a hot-plug reconcile (`plexus hotplug`); a housekeeping pass (`plexus records retry`); a
 * network's DEL made to fail (host-local cannot take its store's lock) and repaired.
 *
 * CI runs a fixed seed, ten runs of up to forty steps, and after a failure at most thirty
 * shrinking replays. A longer run (another seed, more and longer runs, more shrinking):
 *   PLEXUS_MODEL_SEED=7 PLEXUS_MODEL_RUNS=200 PLEXUS_MODEL_STEPS=60 PLEXUS_MODEL_SHRINKS=200 \
 *     npx vitest run test/e2e/gate-model.test.ts
 * PLEXUS_MODEL_TRACE=1 prints each step as it passes.
 *
 * Subnets 10.247.x.0/24, only inside the namespaces and bridges each run makes.
 */
import { join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { describeE2e, E2eScope, NOTHING_LEFT } from "../support/netns";
import {
  DEVICE,
  foreignLinkProblems,
  GateNode,
  POD_ARGS,
  type PodNetns,
  unrecordedAttachments,
} from "./gate-node";

const envNumber = (name: string, fallback: number) => {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
};
const SEED = envNumber("PLEXUS_MODEL_SEED", 4);
const RUNS = envNumber("PLEXUS_MODEL_RUNS", 10);
const STEPS = envNumber("PLEXUS_MODEL_STEPS", 40);
const SHRINKS = envNumber("PLEXUS_MODEL_SHRINKS", 30);

const NADS = ["net-a", "net-b", "net-c"] as const;
type Nad = (typeof NADS)[number];
const NETWORKS = ["cbr0", ...NADS] as const;
type Network = (typeof NETWORKS)[number];

/** What a tenant may make of a NAD; the ones after `renamed` are refused by the policy. */
const VARIANTS = [
  "good",
  "subnet",
  "bridge",
  "dataDir",
  "renamed",
  "evil",
  "macvlan",
  "tuning",
  "ipamSriov",
  "deviceID",
  "pciBusIDFolded",
  "runtimeConfigDeviceID",
  "noConfig",
] as const;
type Variant = (typeof VARIANTS)[number];
const ALLOWED_VARIANTS = new Set<Variant>(["good", "subnet", "bridge", "dataDir", "renamed"]);

/** The annotation's possible selections; the ones after `cExtra` are refused. */
const SELECTIONS = {
  a: { name: "net-a" },
  b: { name: "net-b" },
  cExtra: { name: "net-c", interface: "extra" },
  bLo: { name: "net-b", interface: "lo" },
  cTap: { name: "net-c", interface: "tap0" },
  aDevice: { name: "net-a", interface: "dev1", deviceID: DEVICE },
  bHostPort: {
    name: "net-b",
    interface: "pm1",
    portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
  },
} as const;
type Selection = keyof typeof SELECTIONS;
const ALLOWED_SELECTIONS = new Set<Selection>(["a", "b", "cExtra"]);

type Phase = "added" | "addFailed" | "removed";

interface Model {
  nads: Record<Nad, Variant>;
  selections: Selection[];
  broken: Set<Network>;
  sandbox: { containerId: string; phase: Phase };
  seq: number;
}

interface Sandbox {
  containerId: string;
  netns: PodNetns;
}

const NAD_INDEX: Record<Nad, number> = { "net-a": 1, "net-b": 2, "net-c": 3 };

/** One run's node, its sandboxes (the current one last) and the tenant's configs. */
class World {
  readonly node: GateNode;
  readonly sandboxes: Sandbox[] = [];
  readonly dataDir2: string;
  private readonly bridges: Record<Nad, [string, string]>;

  constructor(readonly scope: E2eScope) {
    this.node = new GateNode(scope, { cbr0Subnet: "10.247.0.0/24" });
    this.dataDir2 = join(scope.root, "ipam-elsewhere");
    const pair = (): [string, string] => [scope.bridgeName(), scope.bridgeName()];
    this.bridges = { "net-a": pair(), "net-b": pair(), "net-c": pair() };
    this.node.addAdminConfFile("net-a", "macvlan");
    this.node.addAdminConfFile("net-b", "sriov");
    this.node.addAdminConfFile("net-c", "evil");
    for (const nad of NADS) this.setNad(nad, "good");
  }

  get current(): Sandbox {
    return this.sandboxes.at(-1)!;
  }

  newSandbox(containerId: string): void {
    this.sandboxes.push({ containerId, netns: this.node.addPodNetns("10.247") });
  }

  setNad(nad: Nad, variant: Variant): void {
    this.node.setNad(nad, this.nadConfig(nad, variant));
  }

  /** The NAD's `spec.config` for `variant` (undefined: none). */
  private nadConfig(nad: Nad, variant: Variant): unknown {
    const n = NAD_INDEX[nad];
    const [bridge, otherBridge] = this.bridges[nad];
    const base = { subnet: `10.247.${n}.0/24`, bridge, capable: true };
    const good = this.node.bridgeConf(nad, base);
    const plugin = good.plugins[0]!;
    const withPlugin = (more: Record<string, unknown>) => ({
      ...good,
      plugins: [{ ...plugin, ...more }],
    });
    const variants: Record<Variant, () => unknown> = {
      good: () => good,
      subnet: () => this.node.bridgeConf(nad, { ...base, subnet: `10.247.${10 + n}.0/24` }),
      bridge: () => this.node.bridgeConf(nad, { ...base, bridge: otherBridge }),
      dataDir: () => this.node.bridgeConf(nad, { ...base, dataDir: this.dataDir2 }),
      renamed: () => this.node.bridgeConf(`${nad}-x`, base),
      evil: () => ({ cniVersion: "1.0.0", name: nad, type: "evil" }),
      macvlan: () => ({ ...good, plugins: [{ type: "macvlan", master: "x", ipam: plugin.ipam }] }),
      tuning: () => ({ ...good, plugins: [plugin, { type: "tuning", mtu: 1400 }] }),
      ipamSriov: () => withPlugin({ ipam: { type: "sriov" } }),
      deviceID: () => withPlugin({ deviceID: DEVICE }),
      pciBusIDFolded: () => withPlugin({ "pciBu\u017fID": DEVICE }),
      runtimeConfigDeviceID: () => withPlugin({ RuntimeConfig: { DeviceID: DEVICE } }),
      noConfig: () => undefined,
    };
    return variants[variant]();
  }

  /** Invariants 1 to 4, after `step`. */
  check(step: string): void {
    const live = this.sandboxes;
    const problems = [
      ...this.node.disallowedRuns().map((r) => `a type outside the allow-list ran: ${r}`),
      ...this.node.deviceKeysGiven().map((k) => `a delegate was given a device key: ${k}`),
      ...live.flatMap((s) => foreignLinkProblems(s.netns)),
      ...unrecordedAttachments(this.node, live, [this.scope.dataDir, this.dataDir2]),
    ];
    if (problems.length > 0) throw new Error(`after ${step}:\n  ${problems.join("\n  ")}`);
  }

  /** Everything repaired and torn down as a runtime and housekeeping would; nothing may be left. */
  async finish(model: Model): Promise<void> {
    for (const network of NETWORKS) {
      this.node.repairDel(network);
      this.node.repairDel(network, this.dataDir2);
    }
    if (model.sandbox.phase !== "removed") await this.delUntilGone();
    for (const { containerId } of this.sandboxes) {
      const gone = await this.node.run("DEL", delGoneEnv(containerId, ""));
      expect(gone.code, `DEL of ${containerId} at the end: ${gone.stdout}`).toBe(0);
    }
    expect((await this.node.housekeeping()).code).toBe(0);
    this.check("the final teardown");
    expect(this.node.records()).toEqual([]);
    expect(this.node.reservations([this.scope.dataDir, this.dataDir2])).toEqual([]);
    expect(this.scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }

  /** The runtime's DELs of the current sandbox until one answers 0 (a failed DEL is retried). */
  async delUntilGone(): Promise<void> {
    const { containerId, netns } = this.current;
    for (let i = 0; i < 3; i++) {
      const del = await this.node.runPod("DEL", containerId, netns.path);
      if (del.code === 0) return this.scope.deleteNetns(netns);
    }
    throw new Error(`the runtime's DEL of ${containerId} failed three times after the repair`);
  }
}

const delGoneEnv = (containerId: string, netns: string) => ({
  CNI_CONTAINERID: containerId,
  CNI_NETNS: netns,
  CNI_IFNAME: "eth0",
  CNI_ARGS: POD_ARGS,
});

type Cmd = fc.AsyncCommand<Model, World>;

/** A command whose step is checked for the four invariants once it has run. */
abstract class Step implements Cmd {
  abstract check(model: Readonly<Model>): boolean;
  protected abstract act(model: Model, world: World): Promise<void>;
  abstract toString(): string;
  async run(model: Model, world: World): Promise<void> {
    await this.act(model, world);
    world.check(this.toString());
    if (process.env.PLEXUS_MODEL_TRACE) console.log(`step: ${this.toString()}`);
  }
}

/**
 * The runtime creates the pod's next sandbox (its namespace, with its own `tap0`) and ADDs it.
 * An ADD the model knows the policy refuses must fail.
 */
class NewSandboxAdd extends Step {
  check(m: Readonly<Model>): boolean {
    return m.sandbox.phase === "removed";
  }
  toString(): string {
    return "new sandbox, runtime ADD";
  }
  async act(model: Model, world: World) {
    model.seq++;
    const containerId = `ctr-${model.seq}`;
    world.newSandbox(containerId);
    const add = await world.node.runPod("ADD", containerId, world.current.netns.path);
    model.sandbox = { containerId, phase: add.code === 0 ? "added" : "addFailed" };
    const refused =
      model.selections.some((s) => !ALLOWED_SELECTIONS.has(s)) ||
      model.selections.some((s) => !ALLOWED_VARIANTS.has(model.nads[SELECTIONS[s].name]));
    if (refused && add.code === 0)
      throw new Error(`ADD succeeded for ${JSON.stringify(model)}: ${add.stdout}`);
  }
}

/** The runtime's DEL of a sandbox whose namespace exists; once it answers 0 the namespace goes. */
class RuntimeDel extends Step {
  check(m: Readonly<Model>): boolean {
    return m.sandbox.phase === "added" || m.sandbox.phase === "addFailed";
  }
  toString(): string {
    return "runtime DEL";
  }
  async act(model: Model, world: World) {
    const { containerId, netns } = world.current;
    const del = await world.node.runPod("DEL", containerId, netns.path);
    if (del.code !== 0) return;
    // Before the runtime removes the namespace: nothing foreign may have gone with the DEL.
    world.check("runtime DEL, before the namespace is removed");
    world.scope.deleteNetns(netns);
    model.sandbox.phase = "removed";
  }
}

/** The runtime's DEL again once the sandbox is gone: with CNI_NETNS="" or the stale path. */
class RuntimeDelAgain extends Step {
  constructor(private readonly emptyNetns: boolean) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.sandbox.phase === "removed";
  }
  toString(): string {
    return `runtime DEL again (CNI_NETNS ${this.emptyNetns ? "empty" : "stale"})`;
  }
  async act(_model: Model, world: World) {
    const { containerId, netns } = world.current;
    const env = delGoneEnv(containerId, this.emptyNetns ? "" : netns.path);
    const del = await world.node.run("DEL", env);
    // M7: a DEL for a sandbox that is gone never fails for ever; the record keeps what failed.
    if (del.code !== 0) throw new Error(`DEL of a removed sandbox failed: ${del.stdout}`);
  }
}

class RuntimeCheck extends Step {
  check(m: Readonly<Model>): boolean {
    return m.sandbox.phase === "added";
  }
  toString(): string {
    return "runtime CHECK";
  }
  async act(_model: Model, world: World) {
    const { containerId, netns } = world.current;
    await world.node.runPod("CHECK", containerId, netns.path);
  }
}

/** A CNI GC listing the sandbox the runtime still has (none once it is removed). */
class RuntimeGc extends Step {
  check(): boolean {
    return true;
  }
  toString(): string {
    return "runtime GC";
  }
  async act(model: Model, world: World) {
    const { containerId } = world.current;
    const live = model.sandbox.phase !== "removed";
    await world.node.gc(live ? [{ containerID: containerId, ifname: "eth0" }] : []);
  }
}

class Hotplug extends Step {
  check(): boolean {
    return true;
  }
  toString(): string {
    return "hot-plug reconcile";
  }
  async act(_model: Model, world: World) {
    const hot = await world.node.hotplug();
    if (hot.code === 3) throw new Error(`plexus hotplug could not run: ${hot.stderr}`);
  }
}

class Housekeeping extends Step {
  check(): boolean {
    return true;
  }
  toString(): string {
    return "housekeeping pass";
  }
  async act(_model: Model, world: World) {
    const pass = await world.node.housekeeping();
    if (pass.code !== 0) throw new Error(`plexus records retry failed: ${pass.stderr}`);
  }
}

class EditNad extends Step {
  constructor(
    private readonly nad: Nad,
    private readonly variant: Variant,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.nads[this.nad] !== this.variant;
  }
  toString(): string {
    return `tenant edits NAD ${this.nad}: ${this.variant}`;
  }
  async act(model: Model, world: World) {
    model.nads[this.nad] = this.variant;
    world.setNad(this.nad, this.variant);
  }
}

class EditNetworks extends Step {
  constructor(private readonly selections: Selection[]) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.selections.join() !== this.selections.join();
  }
  toString(): string {
    return `tenant sets networks [${this.selections.join(", ")}]`;
  }
  async act(model: Model, world: World) {
    model.selections = [...this.selections];
    world.node.setNetworks(JSON.stringify(this.selections.map((s) => SELECTIONS[s])));
  }
}

class BreakDel extends Step {
  constructor(private readonly network: Network) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return !m.broken.has(this.network);
  }
  toString(): string {
    return `${this.network}'s DEL starts failing`;
  }
  async act(model: Model, world: World) {
    model.broken.add(this.network);
    world.node.breakDel(this.network);
  }
}

/** B86's story in one step: the NAD's attachments stop tearing down, and the tenant edits it. */
class BreakAndEditNad extends Step {
  constructor(
    private readonly nad: Nad,
    private readonly variant: Variant,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return !m.broken.has(this.nad);
  }
  toString(): string {
    return `${this.nad}'s DEL starts failing, and the tenant edits it: ${this.variant}`;
  }
  async act(model: Model, world: World) {
    model.broken.add(this.nad);
    world.node.breakDel(this.nad);
    model.nads[this.nad] = this.variant;
    world.setNad(this.nad, this.variant);
  }
}

class RepairDel extends Step {
  constructor(private readonly network: Network) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.broken.has(this.network);
  }
  toString(): string {
    return `${this.network}'s DEL repaired`;
  }
  async act(model: Model, world: World) {
    model.broken.delete(this.network);
    world.node.repairDel(this.network);
  }
}

const network = fc.constantFrom(...NETWORKS);
/**
 * The annotation: selections the policy allows, and at most one it refuses (a tenant adding one
 * odd selection), so that an ADD gets past the planner to where the interface is checked.
 */
const networksEdit = fc
  .tuple(
    fc.subarray([...ALLOWED_SELECTIONS], { maxLength: 2 }),
    fc.option(
      fc.constantFrom(
        ...(Object.keys(SELECTIONS) as Selection[]).filter((k) => !ALLOWED_SELECTIONS.has(k)),
      ),
      { nil: undefined },
    ),
  )
  .map(([allowed, odd]) => new EditNetworks(odd ? [...allowed, odd] : allowed));
/**
 * The arbitraries, an entry repeated for weight: a tenant's edit matters when a sandbox comes or
 * goes after it, so the runtime's calls and the edits come most often.
 */
const commands = fc.commands(
  [
    ...Array.from({ length: 3 }, () => fc.constant(new NewSandboxAdd())),
    ...Array.from({ length: 3 }, () => fc.constant(new RuntimeDel())),
    fc.boolean().map((empty) => new RuntimeDelAgain(empty)),
    fc.constant(new RuntimeCheck()),
    fc.constant(new RuntimeGc()),
    fc.constant(new Hotplug()),
    fc.constant(new Housekeeping()),
    // Edits the policy lets through and edits it refuses, as often as each other.
    ...[
      VARIANTS.filter((v) => ALLOWED_VARIANTS.has(v)),
      VARIANTS.filter((v) => !ALLOWED_VARIANTS.has(v)),
    ].map((variants) =>
      fc
        .tuple(fc.constantFrom(...NADS), fc.constantFrom(...variants))
        .map(([nad, variant]) => new EditNad(nad, variant)),
    ),
    ...Array.from({ length: 2 }, () => networksEdit),
    network.map((n) => new BreakDel(n)),
    fc
      .tuple(fc.constantFrom(...NADS), fc.constantFrom(...VARIANTS))
      .map(([nad, variant]) => new BreakAndEditNad(nad, variant)),
    network.map((n) => new RepairDel(n)),
  ],
  { maxCommands: STEPS, size: "max" },
);

/** A pod app/web selecting net-a and net-b, its first sandbox added. */
async function setUpRun(world: World): Promise<Model> {
  const model: Model = {
    nads: { "net-a": "good", "net-b": "good", "net-c": "good" },
    selections: ["a", "b"],
    broken: new Set(),
    sandbox: { containerId: "ctr-1", phase: "added" },
    seq: 1,
  };
  world.node.setNetworks(JSON.stringify([SELECTIONS.a, SELECTIONS.b]));
  world.newSandbox("ctr-1");
  const { containerId, netns } = world.current;
  const add = await world.node.runPod("ADD", containerId, netns.path);
  expect(add.code, add.stdout).toBe(0);
  world.check("the first ADD");
  return model;
}

/**
 * One generated sequence against a fresh node; everything it made is removed whatever happens.
 * After a failure only SHRINKS more sequences run (shrinking replays them against the real
 * system): the candidates after them pass untried, and the smallest failure so far stands.
 */
async function runSequence(cmds: Iterable<Cmd>, shrinking: { failed: boolean; tried: number }) {
  if (shrinking.failed && ++shrinking.tried > SHRINKS) return;
  const world = new World(new E2eScope());
  try {
    const model = await setUpRun(world);
    await fc.asyncModelRun(() => ({ model, real: world }), cmds);
    await world.finish(model);
  } catch (err) {
    shrinking.failed = true;
    throw err;
  } finally {
    const report = await world.scope.dispose();
    expect(report).toEqual({ netns: [], hostLinks: [], tempDir: [], processes: [] });
  }
}

/** A guard against a hang, never a verdict on speed: each plexus call has its own deadline. */
const TIMEOUT_MS = Math.max(300_000, (RUNS + SHRINKS) * STEPS * 1000);
describeE2e("e2e delegate gate, model-based: tenants, the runtime and the node's passes", () => {
  it(
    `B86 B87 B88 B94 ${RUNS} runs, seed ${SEED}: allowed types only; lo, tap0 and records kept`,
    async () => {
      const started = Date.now();
      const shrinking = { failed: false, tried: 0 };
      await fc.assert(
        fc.asyncProperty(commands, (cmds) => runSequence(cmds, shrinking)),
        { seed: SEED, numRuns: RUNS },
      );
      const took = Date.now() - started;
      console.log(`gate model: ${RUNS} runs of up to ${STEPS} steps in ${took} ms`);
    },
    TIMEOUT_MS,
  );
});
