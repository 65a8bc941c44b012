/**
 * M1, B17: one key fold, Go's (Unicode simple folding, as strings.EqualFold), for every config key
 * Plexus reads, sets, strips or refuses; proven with generated keys. The same fold against Go
 * itself: test/integration/go-json-keys.test.ts.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ConfList, parseConfList } from "../../../src/cni/conf";
import { CniError, Code } from "../../../src/cni/errors";
import { assertNoCaseCollisions, showKey } from "../../../src/cni/json";
import { foldKey, getKeyFold, hasKeyFold, KeySet, withKeysFold } from "../../../src/cni/keys";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import { buildPluginConf } from "../../../src/libcni/conflist";
import { applySelection } from "../../../src/npwg/delegate-args";
import { resolveNadConfig } from "../../../src/npwg/nad";
import type { Nad } from "../../../src/npwg/types";
import * as gen from "../../support/key-spellings";
import { propertyRuns } from "../../support/property";

const { FC_SEED, oracleFold, plexusConfig, spelling, TENANT, tenantConfig } = gen;

const RUNS = propertyRuns({ seed: FC_SEED, numRuns: 300 });
const alphabet = fc.constantFrom(..."aAbBkKsStTzZ09._-/\u017f\u212a");
const key = fc.string({ unit: alphabet, maxLength: 8 });

/** The code 7 a decoder must refuse with, or rethrow anything else so the property fails. */
function refusedWith7(err: unknown): void {
  if (!(err instanceof CniError) || err.code !== Code.InvalidNetworkConfig) throw err;
}

/** Every key of `obj` that Go reads as one of `names`, with the spelling it has. */
function spellingsOf(obj: Record<string, unknown>, names: readonly string[]): string[] {
  const wanted = new Set(names.map(oracleFold));
  return Object.keys(obj).filter((k) => wanted.has(oracleFold(k)));
}

describe("M1 foldKey is Go's fold", () => {
  it("M1 B77 ſ folds as s, the Kelvin sign as k: prevReſult is prevResult, Kind is kind", () => {
    expect(foldKey("prevRe\u017fult")).toBe(foldKey("prevResult"));
    expect(foldKey("\u212aind")).toBe(foldKey("kind"));
    expect(new KeySet(["capabilities"]).match("capabilitie\u017f")).toBe("capabilities");
    expect(getKeyFold({ "prevRe\u017fult": 1 }, "prevResult")).toBe(1);
    expect(hasKeyFold({ "ar\u017fs": 1 }, "args")).toBe(false);
    // JavaScript's lower-casing is not Go's: it leaves ſ alone, and İ becomes two code points.
    expect("\u017f".toLowerCase()).not.toBe("s");
    expect(foldKey("\u0130")).toBe("\u0130");
  });

  it("M1 two keys of ASCII, ſ and K fold together exactly when Go's rule says they match", () => {
    fc.assert(
      fc.property(key, key, (left, right) => {
        expect(foldKey(left) === foldKey(right)).toBe(oracleFold(left) === oracleFold(right));
      }),
      RUNS,
    );
  });

  it("M1 an ASCII key folds to its upper case; any key's fold is its own fold (idempotent)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary-ascii" }), (ascii) => {
        expect(foldKey(ascii)).toBe(ascii.toUpperCase());
      }),
      RUNS,
    );
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (any) => {
        expect(foldKey(foldKey(any))).toBe(foldKey(any));
      }),
      RUNS,
    );
  });

  it("M1 a lone surrogate folds to U+FFFD, as Go's decoder reads it", () => {
    expect(foldKey("a\ud800")).toBe("A\ufffd");
    expect(foldKey("\udc00")).toBe(foldKey("\ufffd"));
    const twoSurrogates = JSON.parse('{"\\ud800": 1, "\\udc00": 2}');
    const both = /has both "\\ud800" and "\\udc00"/;
    expect(() => assertNoCaseCollisions(twoSurrogates, "NAD a/b")).toThrow(both);
  });

  it("M1 getKeyFold reads the last spelling (Go sets a field once per key, in order)", () => {
    fc.assert(
      fc.property(fc.array(spelling("prevResult"), { minLength: 1, maxLength: 4 }), (spellings) => {
        const obj = Object.fromEntries(spellings.map((k, i) => [k, i]));
        const last = Object.keys(obj).at(-1)!;
        expect(getKeyFold(obj, "prevResult")).toBe(obj[last]);
      }),
      RUNS,
    );
  });
});

describe("B17 keys that fold together in one object are refused with 7 naming both", () => {
  it("B17 B77 refused exactly when two keys fold together; the message names both", () => {
    fc.assert(
      fc.property(fc.uniqueArray(key, { maxLength: 5 }), (keys) => {
        const obj = Object.fromEntries(keys.map((k) => [k, 1]));
        const folds = Object.keys(obj).map(oracleFold);
        const collides = new Set(folds).size !== folds.length;
        let err: unknown;
        try {
          assertNoCaseCollisions(obj, "test config");
        } catch (e) {
          err = e;
        }
        expect(err !== undefined).toBe(collides);
        if (!err) return;
        expect(err).toBeInstanceOf(CniError);
        expect((err as CniError).code).toBe(Code.InvalidNetworkConfig);
        const named = Object.keys(obj).filter((k) => (err as Error).message.includes(showKey(k)));
        expect(named.length).toBeGreaterThanOrEqual(2);
      }),
      RUNS,
    );
  });

  it("B17 the message spells a non-ASCII key with escapes, so ſ cannot be read as s", () => {
    const both = { prevResult: {}, "prevRe\u017fult": {} };
    expect(() => assertNoCaseCollisions(both, "NAD a/b")).toThrow(
      'NAD a/b has both "prevResult" and "prevRe\\u017fult"',
    );
  });

  it("M1 withKeysFold leaves one spelling of each key it sets, whatever the object had", () => {
    fc.assert(
      fc.property(fc.array(spelling("args"), { maxLength: 3 }), (spellings) => {
        const obj = Object.fromEntries(spellings.map((k) => [k, TENANT]));
        const out = withKeysFold({ ...obj, mtu: 1 }, { args: "plexus" });
        expect(spellingsOf(out, ["args"])).toEqual(["args"]);
        expect(out).toMatchObject({ args: "plexus", mtu: 1 });
      }),
      RUNS,
    );
  });
});

const nad = (config: unknown): Nad => ({
  apiVersion: "k8s.cni.cncf.io/v1",
  kind: "NetworkAttachmentDefinition",
  metadata: { namespace: "tenant", name: "net-a" },
  spec: { config: JSON.stringify(config) },
});

/** Go's read of `name` in `obj` for this alphabet: the last key that folds to it. */
function goRead(obj: Record<string, unknown>, name: string): unknown {
  const keys = spellingsOf(obj, [name]);
  return keys.length ? obj[keys.at(-1)!] : undefined;
}

const OWNED = ["cniVersion", "name", "type", "capabilities", "ipam", "runtimeConfig", "prevResult"];
OWNED.push("args");

/** The keys of a decoded ConfList are as Go reads the input: one spelling each, Go's value. */
function expectOwnedKeysAsGo(conf: ConfList, input: Record<string, unknown>): void {
  const plugins = Array.isArray(goRead(input, "plugins"))
    ? (goRead(input, "plugins") as Record<string, unknown>[])
    : [input];
  expect(conf.plugins).toHaveLength(plugins.length);
  conf.plugins.forEach((plugin, i) => {
    const others = OWNED.flatMap((name) => spellingsOf(plugin, [name]).filter((k) => k !== name));
    expect(others).toEqual([]);
    expect(plugin.type).toBe(goRead(plugins[i]!, "type"));
    const ipam = goRead(plugins[i]!, "ipam") as Record<string, unknown> | undefined;
    if (ipam) expect((plugin.ipam as Record<string, unknown>).type).toBe(goRead(ipam, "type"));
  });
  const name = goRead(input, "name");
  expect(conf.name).toBe(name ?? "net-a");
}

describe("M1 B17 the decoders of config keys, on generated documents", () => {
  it("M1 B17 a NAD's spec.config: refused with 7, or each owned key as Go reads it", () => {
    fc.assert(
      fc.property(tenantConfig, (config) => {
        try {
          const { conf } = resolveNadConfig(nad(config), []);
          expectOwnedKeysAsGo(conf, config);
        } catch (err) {
          refusedWith7(err);
        }
      }),
      RUNS,
    );
  });

  it("M1 B17 a conflist from the config directory, picked by name: 7, or as Go reads it", () => {
    const fileOnly: Nad = { ...nad({}), spec: {} };
    fc.assert(
      fc.property(tenantConfig, (config) => {
        const file = { path: "/etc/cni/net.d/20-net-a.conflist", content: JSON.stringify(config) };
        try {
          const { conf, source } = resolveNadConfig(fileOnly, [file]);
          expect(source).toBe(file.path);
          expect(goRead(config, "name")).toBe("net-a");
          expectOwnedKeysAsGo(conf, config);
        } catch (err) {
          refusedWith7(err);
        }
      }),
      RUNS,
    );
  });

  it("M1 B17 a delegate's config: the same, and its stdin has no tenant owned key", () => {
    fc.assert(
      fc.property(tenantConfig, (config) => {
        let conf: ConfList;
        try {
          conf = parseConfList(config, { what: "delegate 0" });
        } catch (err) {
          return refusedWith7(err);
        }
        for (const plugin of conf.plugins) {
          const stdin = buildPluginConf(conf, plugin, { portMappings: [] });
          for (const owned of ["runtimeConfig", "prevResult", "capabilities"]) {
            expect(spellingsOf(stdin, [owned]).every((k) => k === owned)).toBe(true);
          }
          expect(JSON.stringify(stdin.prevResult ?? null)).not.toContain(TENANT);
          expect(JSON.stringify(stdin.runtimeConfig ?? null)).not.toContain(TENANT);
          expect(goRead(stdin, "name")).toBe(conf.name);
          expect(goRead(stdin, "cniVersion")).toBe(conf.cniVersion);
        }
      }),
      RUNS,
    );
  });

  it("M1 B17 Plexus's own config, logOptions, delegates[]: 7, or as Go reads it", () => {
    fc.assert(
      fc.property(plexusConfig, (config) => {
        try {
          const conf = parsePlexusConf(config);
          expect(conf.clusterNetwork).toBe(goRead(config, "clusterNetwork"));
          expect(conf.kubeconfig).toBe(goRead(config, "kubeconfig"));
          expect(conf.namespaceIsolation).toBe(goRead(config, "namespaceIsolation") ?? false);
          const delegates = (goRead(config, "delegates") ?? []) as Record<string, unknown>[];
          conf.delegates.forEach((d, i) => expectOwnedKeysAsGo(d, delegates[i]!));
        } catch (err) {
          refusedWith7(err);
        }
      }),
      RUNS,
    );
  });
});

describe("M1 a mistyped key is named when the config fails", () => {
  it("M1 a clusterNetwrok, no clusterNetwork: the error names the typo and the key meant", () => {
    const config = { cniVersion: "1.0.0", name: "p", type: "plexus", clusterNetwrok: "/x" };
    expect(() => parsePlexusConf(config)).toThrow(/names no network/);
    expect(() => parsePlexusConf(config)).toThrow(
      "`clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`?",
    );
  });

  it("M1 B17 a failing config's unknown keys are named five at most, each cut and escaped", () => {
    const config: Record<string, unknown> = { cniVersion: "1.0.0", name: "p", type: "plexus" };
    for (let i = 0; i < 20; i++) config[`${"x".repeat(50_000)}${i}`] = 1;
    config["a\u0000b"] = 1;
    let msg = "";
    try {
      parsePlexusConf(config);
    } catch (err) {
      msg = (err as Error).message;
    }
    expect(msg).toContain("names no network");
    expect(msg).toContain("(50001 characters) is not a Plexus key and is ignored");
    expect(msg).toContain("; and 16 more)");
    expect(msg.length).toBeLessThan(1500);
  });

  it("M1 a schema error names the typo too; a config that works does not fail for one", () => {
    const typo = { cniVersion: "1.0.0", name: "n", type: "plexus", clusterNetwork: "/a" };
    Object.assign(typo, { delegateTimeoutSecond: 1 });
    expect(parsePlexusConf(typo).unknownKeys).toEqual(["delegateTimeoutSecond"]);
    const broken = { ...typo, maxNetworks: "many" };
    expect(() => parsePlexusConf(broken)).toThrow("did you mean `delegateTimeoutSeconds`?");
  });
});

describe("M4 M1 what a selection sets in args.cni wins over every spelling in the NAD", () => {
  it("M4 M1 the NAD's ARGS / CNI / IPS in any spelling are merged into Plexus's args.cni", () => {
    const spelled = fc.tuple(spelling("args"), spelling("cni"), spelling("ips"));
    fc.assert(
      fc.property(spelled, ([argsKey, cniKey, ipsKey]) => {
        const raw = { cniVersion: "1.0.0", name: "n", type: "bridge" };
        Object.assign(raw, { [argsKey]: { [cniKey]: { [ipsKey]: [TENANT], keep: 1 } } });
        const conf = parseConfList(raw, { what: "NAD t/n" });
        const sel = { namespace: "t", name: "n", ips: ["10.9.9.9/24"] };
        const plugin = applySelection(conf, sel).conf.plugins[0]!;
        expect(spellingsOf(plugin, ["args"])).toEqual(["args"]);
        const args = plugin.args as Record<string, Record<string, unknown>>;
        expect(Object.keys(args)).toEqual(["cni"]);
        expect(args.cni).toEqual({ keep: 1, ips: ["10.9.9.9/24"] });
      }),
      RUNS,
    );
  });
});
