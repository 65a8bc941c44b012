/**
 * M17 B6: Plexus reads CNI_ARGS as Go does. Each generated string goes through parseCniArgs and
 * through libcni's own types.LoadArgs into Multus's K8sArgs (test/support/go/cniargs, built with
 * the machine's Go against the libcni Multus v4.0.2 vendors); both must refuse it, or both must
 * read the same values.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { type CniArgs, parseCniArgs } from "../../../src/cni/args";
import {
  buildGoCniArgs,
  type GoK8sArgs,
  goCniArgsUnavailable,
  goLoadArgs,
} from "../../support/go-cniargs";
import { isCi } from "../../support/netns";
import { propertyRuns } from "../../support/property";

const FIELDS = ["K8S_POD_NAME", "K8S_POD_NAMESPACE", "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID"];
const KEYS = ["IgnoreUnknown", "IP", ...FIELDS];

/** Characters that make odd values: separators, case pairs, non-ASCII and controls. */
const CHARS = [
  ..."aeflrstuATRUEF01:.=;% -_/",
  "é",
  "日",
  "\u212a",
  "\u0130",
  "\u017f",
  "\n",
  "\u2028",
];
const text = (maxLength: number) => fc.string({ unit: fc.constantFrom(...CHARS), maxLength });

const boolValue = fc.oneof(
  fc.constantFrom("1", "true", "TRUE", "True", "tRuE", "0", "false", "FALSE", "", "yes", "2"),
  fc.constantFrom(" 1", "1 ", "t", "\u0130", "tru\u212a"),
);
/** Groups of 0 to 5 hex digits, an empty one making a `::`, now and then a dotted tail. */
const ipv6Like = fc
  .tuple(
    fc.array(fc.string({ unit: fc.constantFrom(..."0f9A"), maxLength: 5 }), { maxLength: 9 }),
    fc.constantFrom("", "", ":1.2.3.4", ":01.2.3.4", ".1.2.3"),
  )
  .map(([groups, tail]) => groups.join(":") + tail);
const ipValue = fc.oneof(
  fc.constantFrom(
    "10.1.2.3",
    "",
    "010.1.2.3",
    "256.1.1.1",
    "1.2.3",
    "1.2.3.4.5",
    "::",
    "::1",
    "fd00::5",
    "FD00:0:0::5",
    "::ffff:1.2.3.4",
    "1:2:3:4:5:6:1.2.3.4",
    "1:2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7:8::",
    "::1:2:3:4:5:6:7:8",
    "1::2::3",
    "00001::",
    "fe80::1%eth0",
    "1.2.3.4:",
    ":1",
  ),
  fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF:."), maxLength: 14 }),
  ipv6Like,
);
const key = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...KEYS) },
  { weight: 2, arbitrary: fc.constantFrom("ignoreunknown", "k8s_pod_name", "FOO", "MAC", "") },
  { weight: 1, arbitrary: fc.constantFrom("CommonArgs", " K8S_POD_NAME", "K8S_POD_NAME ") },
  { weight: 1, arbitrary: text(6) },
);
const pair = fc.oneof(
  {
    weight: 12,
    arbitrary: key.chain((k) =>
      (k === "IgnoreUnknown" ? boolValue : k === "IP" ? ipValue : text(8)).map((v) => `${k}=${v}`),
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom("", "novalue", "K=a=b", "=") },
);
/** A runtime's or Multus's pairs: what most CNI_ARGS hold, so that many strings are read. */
const plainPair = fc.oneof(
  fc.constantFrom("IgnoreUnknown=1", "IgnoreUnknown=true", "IgnoreUnknown=0", "FOO=bar"),
  fc.constantFrom("IP=10.1.2.3", "IP=fd00::5", "IP=", "MAC=02:00:00:00:00:01"),
  fc
    .tuple(
      fc.constantFrom(...FIELDS),
      fc.string({ unit: fc.constantFrom(..."web-0.a"), maxLength: 6 }),
    )
    .map(([k, v]) => `${k}=${v}`),
);
/** The pod keys given more than once, IgnoreUnknown anywhere, and now and then an odd pair. */
const cniArgs = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom("", ";", "IgnoreUnknown=1;") },
  {
    weight: 8,
    arbitrary: fc.array(plainPair, { minLength: 1, maxLength: 12 }).map((p) => p.join(";")),
  },
  { weight: 8, arbitrary: fc.array(pair, { minLength: 1, maxLength: 12 }).map((p) => p.join(";")) },
);

/** Plexus's reading in the shape Go prints: the last values, "" for a key not given. */
function asGo(args: CniArgs): Omit<GoK8sArgs, "IP"> & { IP: boolean } {
  const out: Record<string, unknown> = {
    IgnoreUnknown: /^(?:1|true)$/i.test(args.get("IgnoreUnknown") ?? ""),
    IP: (args.get("IP") ?? "") !== "",
  };
  for (const field of FIELDS) out[field] = args.get(field) ?? "";
  return out as Omit<GoK8sArgs, "IP"> & { IP: boolean };
}

function plexusReading(raw: string): { args: ReturnType<typeof asGo> } | { error: true } {
  try {
    return { args: asGo(parseCniArgs(raw)) };
  } catch {
    return { error: true };
  }
}

describe("M17 B6 CNI_ARGS read as Go's types.LoadArgs reads it", () => {
  const missing = goCniArgsUnavailable();
  let binary = "";
  beforeAll(() => {
    if (missing && isCi()) throw new Error(`Go's LoadArgs cannot be built: ${missing}`);
    if (missing) console.warn(`\n*** SKIPPING the differential CNI_ARGS tests: ${missing} ***\n`);
    else binary = buildGoCniArgs();
  }, 120_000);

  it("M17 B6 generated CNI_ARGS (keys twice, IgnoreUnknown anywhere, odd values): Plexus refuses what Go refuses and reads the values Go reads", (t) => {
    if (missing) t.skip(missing);
    const raws = fc.sample(cniArgs, propertyRuns({ seed: 17, numRuns: 3000 }));
    const go = goLoadArgs(binary, raws);
    const mismatches = raws.flatMap((raw, i) => {
      const goSide = go[i]!;
      const goReading =
        "error" in goSide
          ? { error: true }
          : { args: { ...goSide.args, IP: goSide.args.IP !== "" } };
      const ours = plexusReading(raw);
      const same = JSON.stringify(ours) === JSON.stringify(goReading);
      return same ? [] : [{ raw, go: goSide, plexus: ours }];
    });
    expect(mismatches.slice(0, 5)).toEqual([]);
    // The sample is not one-sided: both readings and refusals, and keys given twice.
    const accepted = go.filter((g) => "args" in g).length;
    expect(accepted).toBeGreaterThan(raws.length / 10);
    expect(raws.length - accepted).toBeGreaterThan(raws.length / 10);
    const twice = go.filter((g, i) => "args" in g && raws[i]!.split("K8S_POD_NAME=").length > 2);
    expect(twice.length).toBeGreaterThan(raws.length / 50);
  });

  it("M17 the arguments Multus v4.0.2 gives a delegate (its own first, then the runtime's): Go and Plexus read the last values", (t) => {
    if (missing) t.skip(missing);
    const raw =
      "IgnoreUnknown=true;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=sb1;" +
      "K8S_POD_UID=uid-web;IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web-2;" +
      "K8S_POD_INFRA_CONTAINER_ID=sb2;K8S_POD_UID=uid-web-2";
    const [go] = goLoadArgs(binary, [raw]);
    expect(go).toEqual({
      args: {
        IgnoreUnknown: true,
        IP: "",
        K8S_POD_NAMESPACE: "app",
        K8S_POD_NAME: "web-2",
        K8S_POD_INFRA_CONTAINER_ID: "sb2",
        K8S_POD_UID: "uid-web-2",
      },
    });
    expect(plexusReading(raw)).toEqual({
      args: { ...(go as { args: GoK8sArgs }).args, IP: false },
    });
  });
});
