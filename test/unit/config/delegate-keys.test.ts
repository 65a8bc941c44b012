/**
 * The table of the delegates' keys (config/delegate-keys.ts) and its lookup (unknown-keys.ts
 * delegateUnknownKeys): every listed key, in any spelling Go's decoder folds to it, is known; a
 * key one edit away from a listed one is named with it; a type not in the table is not judged;
 * and a failed ADD names the node interface its config names and the node lacks (node-links.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CniError } from "../../../src/cni/errors";
import { foldKey } from "../../../src/cni/keys";
import {
  ipamKeys,
  KNOWN_IPAM_TYPES,
  KNOWN_PLUGIN_TYPES,
  pluginKeys,
} from "../../../src/config/delegate-keys";
import {
  delegateKeyWarnings,
  delegateUnknownKeys,
  describeUnknownKey,
} from "../../../src/config/unknown-keys";
import { withMissingHostLink } from "../../../src/npwg/node-links";
import { propertyRuns } from "../../support/property";

/** A plugin's config, or a macvlan's whose `ipam` is of `type`, with `key` set. */
function configWith(reader: "plugin" | "ipam", type: string, key: string) {
  return reader === "plugin"
    ? { type, [key]: 1 }
    : { cniVersion: "1.0.0", type: "macvlan", ipam: { type, [key]: 1 } };
}

const keysOf = (reader: "plugin" | "ipam", type: string) =>
  (reader === "plugin" ? pluginKeys(type) : ipamKeys(type))!;

/** Every (reader, type, key) of the table but `type` itself (the key that picks the table). */
const listed = fc
  .oneof(
    ...KNOWN_PLUGIN_TYPES.map((type) =>
      fc.tuple(
        fc.constant("plugin" as const),
        fc.constant(type),
        fc.constantFrom(...keysOf("plugin", type).names),
      ),
    ),
    ...KNOWN_IPAM_TYPES.map((type) =>
      fc.tuple(
        fc.constant("ipam" as const),
        fc.constant(type),
        fc.constantFrom(...keysOf("ipam", type).names),
      ),
    ),
  )
  .filter(([, , key]) => key !== "type");

/** A spelling Go folds to `key`: each letter's case flipped or not, `ſ` for s, K for k. */
function goSpelling(key: string): fc.Arbitrary<string> {
  return fc.array(fc.nat(2), { minLength: key.length, maxLength: key.length }).map((picks) =>
    [...key]
      .map((char, i) => {
        const pick = picks[i]!;
        if (pick === 2 && /[sS]/.test(char)) return "\u017f";
        if (pick === 2 && /[kK]/.test(char)) return "\u212a";
        return pick === 1
          ? char === char.toUpperCase()
            ? char.toLowerCase()
            : char.toUpperCase()
          : char;
      })
      .join(""),
  );
}

/** One edit between two folds: an insertion, deletion, substitution or swap of neighbours. */
function oneEditApart(left: string, right: string): boolean {
  const [a, b] = [foldKey(left), foldKey(right)];
  if (Math.abs(a.length - b.length) > 1 || a === b) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length > b.length) return a.slice(i + 1) === b.slice(i);
  if (a.length < b.length) return a.slice(i) === b.slice(i + 1);
  const swapped = a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
  return swapped || a.slice(i + 1) === b.slice(i + 1);
}

/** `key` with one edit at `at` (modulo its length): `char` put in or over one; one cut; a swap. */
function typoOf(key: string, edit: { at: number; op: string; char: string }): string {
  const { op, char } = edit;
  if (op === "swap") {
    if (key.length < 2) return key;
    const i = edit.at % (key.length - 1);
    return key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2);
  }
  const i = edit.at % (key.length + (op === "insert" ? 1 : 0));
  if (op === "insert") return key.slice(0, i) + char + key.slice(i);
  return key.slice(0, i) + (op === "replace" ? char : "") + key.slice(i + 1);
}

describe("the delegates' keys", () => {
  it("every listed key, in any spelling Go folds to it, is known: nothing is reported", () => {
    fc.assert(
      fc.property(
        listed.chain((entry) => fc.tuple(fc.constant(entry), goSpelling(entry[2]))),
        ([[reader, type], spelling]) => {
          expect(delegateUnknownKeys(configWith(reader, type, spelling)).records).toEqual([]);
        },
      ),
      propertyRuns({ seed: 20270412, numRuns: 400 }),
    );
  });

  it("a key one edit away from a listed key gets that key as the suggestion (or one as near)", () => {
    const edit = fc.tuple(
      fc.nat(40),
      fc.constantFrom("insert", "delete", "replace", "swap"),
      fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz_"),
    );
    fc.assert(
      fc.property(listed, edit, ([reader, type, key], [at, op, char]) => {
        const typo = typoOf(key, { at, op, char });
        const known = keysOf(reader, type);
        // A typo that is itself a key (of the same fold as one) is no typo.
        fc.pre(typo !== "" && !known.has(typo));
        const { records } = delegateUnknownKeys(configWith(reader, type, typo));
        expect(records).toHaveLength(1);
        const [record] = records;
        expect(record).toMatchObject({ key: typo, reader, type, kind: "unknown" });
        const rivals = known.names.filter((name) => name !== key && oneEditApart(typo, name));
        if (rivals.length === 0) expect(record!.suggestion).toBe(key);
        else expect(oneEditApart(typo, record!.suggestion!)).toBe(true);
        expect(describeUnknownKey(record!)).toContain(`did you mean \`${record!.suggestion}\`?`);
      }),
      propertyRuns({ seed: 20270413, numRuns: 600 }),
    );
  });

  it("a macvlan NAD's `mastr`, a conflist's own keys and a plugin's in it, an IPAM section's", () => {
    expect(delegateUnknownKeys({ cniVersion: "1.0.0", type: "macvlan", mastr: "eth0" })).toEqual({
      records: [
        { key: "mastr", reader: "plugin", kind: "unknown", suggestion: "master", type: "macvlan" },
      ],
      more: 0,
    });
    const list = {
      cniVesion: "1.0.0",
      plugins: [
        {
          type: "sriov",
          deviceID: "0000:03:00.1",
          vlanQos: 3,
          ipam: { type: "whereabouts", rnage: "10.1.0.0/24" },
        },
        { type: "tuning", MTU: 9000, sysctrl: {} },
      ],
    };
    expect(delegateUnknownKeys(list).records.map(describeUnknownKey)).toEqual([
      "`cniVesion` is not a conflist key (libcni reads no such key); did you mean `cniVersion`?",
      // vlanQos folds to vlanQoS: Go reads it.
      'plugin 0: `rnage` in "ipam" is not a key of the whereabouts IPAM plugin; ' +
        "did you mean `range`?",
      "plugin 1: `sysctrl` is not a key of the tuning plugin; did you mean `sysctl`?",
    ]);
  });

  it("a type not in the table is not judged, nor its IPAM of an unknown type; odd values are skipped", () => {
    expect(
      delegateUnknownKeys({ type: "ovs", bridg: "br0", ipam: { type: "x", rnage: 1 } }).records,
    ).toEqual([]);
    expect(
      delegateUnknownKeys({ type: "ovs", ipam: { type: "static", adresses: [] } }).records,
    ).toEqual([
      expect.objectContaining({ key: "adresses", reader: "ipam", suggestion: "addresses" }),
    ]);
    for (const odd of [
      null,
      "x",
      [],
      { plugins: "x" },
      { plugins: [1, null] },
      { type: 7, mastr: 1 },
    ])
      expect(delegateUnknownKeys(odd).records).toEqual([]);
  });

  it("a hostile config's many keys: a handful named, the rest counted", () => {
    const conf: Record<string, unknown> = { cniVersion: "1.0.0", type: "macvlan" };
    for (let i = 0; i < 50_000; i++) conf[`k${i}`] = 1;
    const lines = delegateKeyWarnings(conf, "NetworkAttachmentDefinition a/b spec.config");
    expect(lines).toHaveLength(6);
    expect(lines[5]).toBe(
      "NetworkAttachmentDefinition a/b spec.config: and 49995 more keys that no reader of it reads",
    );
  });
});

describe("a failed ADD names the node interface its config names and the node lacks", () => {
  const cause = new CniError(999, 'plugin type="macvlan" failed (add): Link not found', "d");
  const exists = (name: string) => name === "eth0";

  it("names the key and the value; an interface there, or none named, leaves the error as it is", () => {
    const named = withMissingHostLink(cause, [{ type: "macvlan", Master: "eth9" }], exists);
    expect(named.message).toBe(
      `${cause.message} (macvlan's "master" "eth9" is not an interface of this node ` +
        "(no /sys/class/net/eth9))",
    );
    expect([named.code, named.details, named.cause]).toEqual([999, "d", cause]);
    const device = withMissingHostLink(cause, [{ type: "host-device", device: "a/b" }], exists);
    expect(device.message).toContain('host-device\'s "device" "a/b" is not a valid interface name');
    for (const plugins of [
      [{ type: "macvlan", master: "eth0" }],
      [{ type: "macvlan" }],
      [{ type: "bridge", bridge: "eth9" }],
      [{ type: "sriov", master: "eth9" }],
    ])
      expect(withMissingHostLink(cause, plugins, exists)).toBe(cause);
  });
});
