/**
 * B92: a delegate config's numbers are kept as written (json.ts `exactNumbers`) from the decode of
 * a NAD, a config file or the stdin config, through the selection's copy and the container
 * record, to the text a delegate gets; numbers Plexus reads itself are still read and checked.
 * The same modules under Bun: test/unit/shipped/exact-numbers.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it, onTestFinished } from "vitest";
import { Code } from "../../../src/cni/errors";
import {
  copyJson,
  decodeJson,
  isPlainObject,
  numberValue,
  parseExactJson,
} from "../../../src/cni/json";
import { parseConfList } from "../../../src/cni/conf";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import { buildPluginConf } from "../../../src/libcni/conflist";
import { applySelection } from "../../../src/npwg/delegate-args";
import { resolveNadConfig } from "../../../src/npwg/nad";
import { readMultusCache } from "../../../src/migration/multus-cache";
import { RecordStore } from "../../../src/nodestate/record";
import { numberLiteral } from "../../support/json-numbers";
import { propertyRuns } from "../../support/property";

const exact = (text: string) => decodeJson(text, { what: "config", exactNumbers: true });
const LITERALS = ['"mtu":12345678901234567890123', '"x":1e2', '"y":-0', '"z":1.50'];
const PLUGIN = `{"type":"noop",${LITERALS.join(",")}}`;

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "plx-exact-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function expectLiterals(text: string): void {
  for (const literal of LITERALS) expect(text).toContain(literal);
}

describe("B92 decoding keeps numbers as written", () => {
  it("B92 property: decode then JSON.stringify gives every number literal back as written", () => {
    fc.assert(
      fc.property(numberLiteral, fc.constantFrom("", " ", "\n\t", "\r\n "), (literal, ws) => {
        const text = `{"first":7,"mtu":${literal},"list":[${literal},${literal},{"n":${literal}}]}`;
        // JSON's whitespace wherever it may stand around a number: written back without it.
        const list = `[${ws}${literal},${ws}${literal}${ws},{"n":${ws}${literal}}]`;
        const spaced = `{"first":7,"mtu":${ws}${literal}${ws},"list":${list}}`;
        const value = exact(spaced) as Record<string, unknown>;
        expect(JSON.stringify(value)).toBe(text);
        expect(JSON.stringify(exact(`[${ws}${literal}${ws}]`))).toBe(`[${literal}]`);
        // A literal that is JavaScript's own text stays a plain number.
        const plain = String(Number(literal)) === literal;
        expect(typeof value.mtu === "number").toBe(plain);
        expect(numberValue(value.mtu)).toBe(Number(literal));
      }),
      propertyRuns({ seed: 20261128, numRuns: 500 }),
    );
  });

  it("B92 without the option, a huge integer, 1e2 and -0 are rewritten", () => {
    expect(JSON.stringify(decodeJson(PLUGIN, { what: "config" }))).toBe(
      '{"type":"noop","mtu":1.2345678901234568e+22,"x":100,"y":0,"z":1.5}',
    );
    expect(JSON.stringify(exact(PLUGIN))).toBe(PLUGIN);
  });

  it("B92 a kept number is no object, copies as itself, and a lone number stays a number", () => {
    const value = exact(PLUGIN) as Record<string, unknown>;
    expect(isPlainObject(value.x)).toBe(false);
    expect(() => structuredClone(value)).toThrow(); // why copyJson, not structuredClone
    const copy = copyJson(value);
    expect(copy).not.toBe(value);
    expect(JSON.stringify(copy)).toBe(PLUGIN);
    expect(parseExactJson("1e2")).toBe(100);
  });

  it("B92 B12 input nested thousands deep is refused with the caller's code, not a crash", () => {
    const code = Code.InvalidNetworkConfig;
    // 1e2 or 1, the number read as written (a reviver, which recurses) or as any other.
    for (const literal of ["1e2", "1"]) {
      const deep = `${"[".repeat(100_000)}${literal}${"]".repeat(100_000)}`;
      expect(() => decodeJson(deep, { what: "config", code, exactNumbers: true })).toThrow(
        expect.objectContaining({
          code,
          message: expect.stringMatching(/^config is nested more than 64 levels deep/),
        }),
      );
    }
  });
});

describe("B92 numbers Plexus reads itself are still read and checked", () => {
  const stdin = (extra: string) =>
    exact(
      '{"cniVersion":"1.0.0","name":"p","type":"plexus",' +
        `"delegates":[{"name":"d",${PLUGIN.slice(1)}]${extra}}`,
    );

  it("B92 Plexus's own 3e1 is 30; a huge or overflowing count is refused naming its key", () => {
    const conf = parsePlexusConf(stdin(',"delegateTimeoutSeconds":3e1,"maxNetworks":4.0'));
    expect(conf.delegateTimeoutMs).toBe(30_000);
    expect(conf.maxNetworks).toBe(4);
    expectLiterals(JSON.stringify(conf.delegates[0]));
    expect(() => parsePlexusConf(stdin(',"maxNetworks":12345678901234567890123'))).toThrow(
      /key "maxNetworks": expected a whole number \(found 12345678901234567890123\)/,
    );
    expect(() => parsePlexusConf(stdin(',"delegateTimeoutSeconds":1e400'))).toThrow(
      /key "delegateTimeoutSeconds": expected a number \(found 1e400\)/,
    );
  });

  it("B92 a delegate written as a number is named a number, as before", () => {
    const [item] = exact("[1e2]") as unknown[];
    expect(() => parseConfList(item, { what: "delegate 0" })).toThrow(
      "delegate 0: expected a CNI config object (a .conf or a .conflist), got number",
    );
  });
});

describe("B92 from a NAD to the delegate's stdin, on ADD and on DEL", () => {
  const nad = {
    metadata: { namespace: "app", name: "exact" },
    spec: { config: `{"cniVersion":"1.0.0","plugins":[${PLUGIN}]}` },
  };

  it("B92 NAD → selection → the delegate's stdin: each literal as written", () => {
    const { conf } = resolveNadConfig(nad, []);
    const sel = { namespace: "app", name: "exact", cniArgs: { extra: 1 } };
    const applied = applySelection(conf, sel);
    const stdin = JSON.stringify(buildPluginConf(applied.conf, applied.conf.plugins[0]!, {}));
    expectLiterals(stdin);
    expect(stdin).toContain('"args":{"cni":{"extra":1}}');
  });

  it("B92 a config file of the config directory keeps them too", () => {
    const content = `{"cniVersion":"1.0.0","name":"exact","plugins":[${PLUGIN}]}`;
    const file = { path: "/etc/cni/net.d/10-exact.conflist", content };
    const { conf } = resolveNadConfig({ metadata: nad.metadata }, [file]);
    expectLiterals(JSON.stringify(buildPluginConf(conf, conf.plugins[0]!, {})));
  });

  it("B92 the record gives DEL the literals ADD ran; Plexus's stay numbers", async () => {
    const store = new RecordStore(tempDir());
    const { conf } = resolveNadConfig(nad, []);
    const attachment = { network: "app/exact", ifName: "net1", isDefault: false, conf };
    await store.write({
      kind: "plexusRecordV1",
      containerId: "ctr1",
      ifName: "eth0",
      netns: "/var/run/netns/x",
      cniVersion: "1.0.0",
      cniArgs: "",
      attachments: [{ ...attachment, failedDels: 1 }],
    });
    const read = await store.read("ctr1", "eth0");
    if (read.state !== "found") throw new Error(`record ${read.state}`);
    const [back] = read.record.attachments;
    expectLiterals(JSON.stringify(buildPluginConf(back!.conf, back!.conf.plugins[0]!, {})));
    expect(back!.failedDels).toBe(1);
  });

  it("B92 a pod Multus attached: its cached config reaches DEL as Multus ran it", async () => {
    const dir = tempDir();
    const entry = { Name: "app/exact", Bytes: Buffer.from(PLUGIN).toString("base64") };
    writeFileSync(join(dir, "ctr1"), JSON.stringify([entry]));
    const query = { dir, containerId: "ctr1", ifName: "eth0", cniVersion: "1.0.0" };
    const read = await readMultusCache(query);
    if (read.state !== "found") throw new Error(`multus cache ${read.state}`);
    const { conf } = read.attachments[0]!;
    expectLiterals(JSON.stringify(buildPluginConf(conf, conf.plugins[0]!, {})));
  });
});
