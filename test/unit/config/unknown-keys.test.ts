/**
 * M1: unknown keys go through one structured path: findUnknownKeys yields the records (key, whose
 * key it is, kind, suggestion), every message is rendered from a record, and a conflist's keys are
 * computed in one place (conflistUnknownKeys) for the installer and `plexus validate` alike.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LIST_KEYS } from "../../../src/cni/conf";
import {
  conflistUnknownKeys,
  describeUnknownKey,
  findUnknownKeys,
  renderUnknownKeys,
} from "../../../src/config/unknown-keys";

describe("M1 unknown keys as records", () => {
  it("M1 a Plexus config's keys: a suggestion where one is near, the thick-daemon keys apart", () => {
    expect(findUnknownKeys(["clusterNetwrok", "socketDir", "zzz"], ["clusterNetwork"])).toEqual([
      { key: "clusterNetwrok", reader: "plexus", kind: "unknown", suggestion: "clusterNetwork" },
      { key: "socketDir", reader: "plexus", kind: "thick" },
      { key: "zzz", reader: "plexus", kind: "unknown" },
    ]);
  });

  it("M1 a conflist's top-level keys, matched as Go matches them; a plugin's own keys are not judged", () => {
    const conflist = {
      cniVersion: "1.0.0",
      NAME: "net",
      disableChek: true,
      chrootDir: "/x",
      plugins: [{ type: "bridge", bogus: 1 }],
    };
    expect(conflistUnknownKeys(conflist)).toEqual([
      { key: "disableChek", reader: "conflist", kind: "unknown", suggestion: "disableCheck" },
      { key: "chrootDir", reader: "conflist", kind: "unknown" },
    ]);
    expect(conflistUnknownKeys({ cniVersion: "1.0.0", type: "bridge", bogus: 1 })).toEqual([]);
    expect(conflistUnknownKeys("not an object")).toEqual([]);
  });

  it("M1 messages are rendered from the records, each naming whose key it is not", () => {
    const [record] = conflistUnknownKeys({ plugins: [], disableChek: true });
    expect(renderUnknownKeys([record!], "primary config /etc/cni/net.d/10-x.conflist")).toEqual([
      {
        ...record,
        msg:
          "primary config /etc/cni/net.d/10-x.conflist: `disableChek` is not a conflist key " +
          "(libcni reads no such key); did you mean `disableCheck`?",
      },
    ]);
  });

  it("M1 a hostile conflist's keys: each message escaped and cut", () => {
    const conflist: Record<string, unknown> = { cniVersion: "1.0.0", plugins: [{ type: "x" }] };
    for (let i = 0; i < 20; i++) conflist[`${"x".repeat(50_000)}${i}`] = 1;
    conflist["a\u0000b"] = 1;
    const reports = renderUnknownKeys(conflistUnknownKeys(conflist), "primary config /c.conflist");
    expect(reports).toHaveLength(21);
    for (const r of reports) {
      expect(r.msg.length).toBeLessThan(250);
      expect([...r.msg].some((char) => char.charCodeAt(0) < 0x20)).toBe(false);
      expect(r.msg).toContain("is not a conflist key (libcni reads no such key)");
    }
    expect(reports[0]!.msg).toContain("(50001 characters)");
    expect(reports[20]!.msg).toContain('"a\\u0000b"');
  });

  it("M1 B75 any key: the rendered text names the key's reader, and the suggestion when there is one", () => {
    const key = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom(...LIST_KEYS.names));
    const typo = key.map((k) => (k.length > 4 ? `${k.slice(0, -1)}x` : k));
    fc.assert(
      fc.property(fc.uniqueArray(typo, { maxLength: 6 }), (keys) => {
        for (const reader of ["plexus", "conflist"] as const) {
          for (const record of findUnknownKeys(keys, LIST_KEYS.names, reader)) {
            const text = describeUnknownKey(record);
            if (record.kind === "thick") expect(reader).toBe("plexus");
            else expect(text).toContain(reader === "plexus" ? "a Plexus key" : "a conflist key");
            if (record.suggestion) expect(text).toContain(`did you mean \`${record.suggestion}\`?`);
          }
        }
      }),
      { seed: 20261126, numRuns: 300 },
    );
  });
});
