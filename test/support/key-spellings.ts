/**
 * Generated config documents whose keys come in every spelling Go's encoding/json reads as one:
 * ASCII case, `ſ` (U+017F, folds to s) and `K` (U+212A, the Kelvin sign, folds to k), duplicates
 * of one key in two spellings, nested in `plugins[]`, `ipam`, `args.cni` and `delegates[]`. Shared
 * by the unit property tests (test/unit/cni/key-fold.test.ts) and the differential test against Go
 * (test/integration/go-json-keys.test.ts).
 */
import fc from "fast-check";

export const FC_SEED = 20261126;

/**
 * The oracle for this alphabet, written apart from src/cni/keys.ts: ſ is s, K is k, and ASCII
 * letters match in either case. Only valid for keys of ASCII, ſ and K.
 */
export function oracleFold(key: string): string {
  return key.replaceAll("\u017f", "s").replaceAll("\u212a", "k").toLowerCase();
}

/** One spelling of `name`: each letter as is, in the other case, or (s, k) as its Unicode fold. */
export function spelling(name: string): fc.Arbitrary<string> {
  const chars = [...name].map((char) => {
    const options = [char, char.toUpperCase(), char.toLowerCase()];
    if (char.toLowerCase() === "s") options.push("\u017f");
    if (char.toLowerCase() === "k") options.push("\u212a");
    return fc.constantFrom(...new Set(options));
  });
  return fc.tuple(...chars).map((parts) => parts.join(""));
}

/** The spelling itself most of the time, so that accepted documents are common too. */
function mostlyExact(name: string): fc.Arbitrary<string> {
  const exact = fc.constant(name);
  return fc.oneof({ weight: 3, arbitrary: exact }, { weight: 2, arbitrary: spelling(name) });
}

/** A key that is no one's, in the same alphabet (so it can collide only with itself). */
const otherKey = fc.constantFrom("mtu", "master", "mode", "kind", "isGateway", "hairpinMode");

interface KeyedEntry {
  key: string;
  value: unknown;
}

/**
 * An object from entries (later entries of one exact key replace earlier ones, as JSON.parse
 * does): `required` keys always present in some spelling, `optional` ones sometimes, and now and
 * then a second spelling of one of them.
 */
function objectOf(options: {
  required: Record<string, fc.Arbitrary<unknown>>;
  optional?: Record<string, fc.Arbitrary<unknown>>;
}): fc.Arbitrary<Record<string, unknown>> {
  const entry = (name: string, value: fc.Arbitrary<unknown>) =>
    fc.record({ key: mostlyExact(name), value }) as fc.Arbitrary<KeyedEntry>;
  const required = Object.entries(options.required).map(([name, value]) => entry(name, value));
  const optional = Object.entries(options.optional ?? {}).map(([name, value]) =>
    fc.option(entry(name, value), { nil: undefined, freq: 2 }),
  );
  const all = { ...options.required, ...options.optional };
  const names = Object.keys(all);
  // One document in four has a second spelling of one of its keys.
  const duplicate = fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constantFrom(...names).chain((name) => entry(name, all[name]!)) },
  );
  const extra = fc.option(
    fc.record({ key: otherKey, value: fc.integer() }).map((e) => e as KeyedEntry),
    { nil: undefined },
  );
  return fc
    .tuple(fc.tuple(...required), fc.tuple(...optional), duplicate, extra, fc.boolean())
    .map(([req, opt, dup, ext, dupFirst]) => {
      const given = opt.filter((e): e is KeyedEntry => e !== undefined);
      const entries: KeyedEntry[] = [...req, ...given];
      if (ext) entries.push(ext);
      if (dup) dupFirst ? entries.unshift(dup) : entries.push(dup);
      const out: Record<string, unknown> = {};
      for (const { key, value } of entries) out[key] = value;
      return out;
    });
}

/** A tenant's value for a key Plexus owns: recognisable in what the delegate receives. */
export const TENANT = "tenant-value";
const tenantObject = fc.constant({ tenant: TENANT, ips: [{ address: "203.0.113.66/24" }] });

const ipam = objectOf({
  required: { type: fc.constant("host-local") },
  optional: { subnet: fc.constant("10.1.0.0/16") },
});
const args = objectOf({
  required: {
    cni: objectOf({
      required: {},
      optional: { ips: fc.constant([TENANT]), mac: fc.constant(TENANT) },
    }),
  },
});

/** One plugin of a tenant's config: every key Plexus owns may appear, in any spelling. */
const tenantPlugin = (type: string): fc.Arbitrary<Record<string, unknown>> =>
  objectOf({
    required: { type: fc.constant(type) },
    optional: {
      capabilities: fc.constant({ portMappings: true, ips: true, mac: true }),
      ipam,
      runtimeConfig: tenantObject,
      prevResult: tenantObject,
      args,
      cniVersion: fc.constant("0.4.0"),
      name: fc.constant(TENANT),
    },
  });

/** A tenant's NAD spec.config: one plugin config, or a conflist of a few. */
export const tenantConfig: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  objectOf({
    required: { cniVersion: fc.constant("1.0.0"), type: fc.constant("bridge") },
    optional: {
      name: fc.constant("net-a"),
      capabilities: fc.constant({ portMappings: true }),
      ipam,
      runtimeConfig: tenantObject,
      prevResult: tenantObject,
      args,
    },
  }),
  objectOf({
    required: {
      cniVersion: fc.constant("1.0.0"),
      plugins: fc
        .tuple(tenantPlugin("bridge"), fc.array(tenantPlugin("portmap"), { maxLength: 2 }))
        .map(([first, rest]) => [first, ...rest]),
    },
    optional: { name: fc.constant("net-a"), disableCheck: fc.constant(true) },
  }),
);

/** Plexus's own stdin config: its keys in any spelling, a typo now and then, delegates nested. */
export const plexusConfig: fc.Arbitrary<Record<string, unknown>> = objectOf({
  required: {
    cniVersion: fc.constant("1.0.0"),
    name: fc.constant("plexus-net"),
    type: fc.constant("plexus"),
  },
  optional: {
    clusterNetwork: fc.constant("/etc/cni/net.d/10-default.conflist"),
    clusterNetwrok: fc.constant("/etc/cni/net.d/10-typo.conflist"),
    kubeconfig: fc.constant("/etc/cni/net.d/plexus.d/plexus.kubeconfig"),
    namespaceIsolation: fc.boolean(),
    logOptions: objectOf({
      required: {},
      optional: { maxAge: fc.constant(3), maxSize: fc.constant(10) },
    }),
    delegates: fc.array(tenantConfig, { maxLength: 2 }),
  },
});
