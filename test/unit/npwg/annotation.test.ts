import { describe, expect, it } from "vitest";
import { parseNetworksAnnotation } from "../../../src/npwg/annotation";
import { validateDns1123Label } from "../../../src/npwg/dns1123";

const parse = (v: string, opts = {}) => parseNetworksAnnotation(v, "pods", { reservedIfName: "eth0", ...opts });

function err(v: string, opts = {}): { code: number; message: string } {
  try {
    parse(v, opts);
  } catch (e) {
    return e as { code: number; message: string };
  }
  throw new Error(`expected ${JSON.stringify(v)} to be refused`);
}

describe("N3.3 DNS-1123 labels", () => {
  it.each(["a", "net-a", "a1", "0", "x".repeat(63)])("N3.3 %j is a valid name", (v) => expect(validateDns1123Label(v, "name")).toBe(v));
  it.each(["A", "-a", "a-", "x".repeat(64), ".", "..", "%2e", "a.b", "a_b", ""])("N3.3 B20 %j is refused with 7", (v) => {
    expect(() => validateDns1123Label(v, "name")).toThrow(expect.objectContaining({ code: 7 }));
  });
});

describe("N4.1 N4.1.1 comma form", () => {
  it("N4.1.1 names, namespace/name and Multus's @ifname; whitespace around items ignored; the pod's namespace by default", () => {
    expect(parse(" net-a , other/net-b@eth5,net-c@net9 ")).toEqual([
      { name: "net-a", namespace: "pods" },
      { name: "net-b", namespace: "other", interfaceRequest: "eth5" },
      { name: "net-c", namespace: "pods", interfaceRequest: "net9" },
    ]);
  });

  it("N4.1 an empty or blank annotation selects nothing", () => {
    expect(parse("")).toEqual([]);
    expect(parse("   ")).toEqual([]);
  });

  it("N4.2 the same network twice is two selections", () => {
    expect(parse("net-a,net-a")).toHaveLength(2);
  });

  it.each([",", "a,,b", "ns/", "/n", "a/b/c", "n@", "n@x@y"])("B19 N4.1.x %j is refused with 7 naming the item", (v) => {
    const e = err(v);
    expect(e.code).toBe(7);
    expect(e.message).toMatch(/networks annotation item \d/);
  });

  it.each(["A", "-a", "x".repeat(64), ".", "..", "%2e", "ns/UPPER", "a b"])("B20 %j (not DNS-1123) is refused with 7 before any request", (v) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining("DNS-1123") });
  });

  it.each(["n@" + "a".repeat(16), "n@eth0/1", "n@a:b"])("B23 N4.1.2.1.5 interface %j is refused with 7", (v) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining("interface") });
  });

  it("B23 the default network's interface cannot be requested", () => {
    expect(err("net-a@eth0")).toMatchObject({ code: 7, message: expect.stringContaining('"eth0" is the default network') });
  });

  it("B25 more networks than maxSelections is refused with the count, in both forms", () => {
    const many = Array.from({ length: 500 }, (_, i) => `n${i}`);
    expect(err(many.join(","))).toMatchObject({ code: 7, message: expect.stringContaining("500 networks") });
    expect(err(JSON.stringify(many.map((name) => ({ name }))))).toMatchObject({ code: 7, message: expect.stringContaining("at most 32") });
    expect(parse(many.slice(0, 40).join(","), { maxSelections: 40 })).toHaveLength(40);
  });
});

describe("N4.1.2 JSON form", () => {
  it("N4.1.2 N4.1.2.1.1 N4.1.2.1.2 name required; namespace missing or empty means the pod's", () => {
    expect(parse('[{"name":"net-a"},{"name":"net-b","namespace":"x"},{"name":"net-c","namespace":""}]')).toEqual([
      { name: "net-a", namespace: "pods" },
      { name: "net-b", namespace: "x" },
      { name: "net-c", namespace: "pods" },
    ]);
  });

  it("N4.1.2 M4 every key is read: ips, mac, interface (and interfaceRequest), infiniband-guid, cni-args, portMappings, bandwidth, default-route, deviceID", () => {
    const [sel] = parse(
      JSON.stringify([
        {
          name: "net-a",
          ips: ["10.1.0.5/24", "fd00::5"],
          mac: "02:00:00:00:00:01",
          interface: "net5",
          "infiniband-guid": "c2:11:22:33:44:55:66:77",
          "cni-args": { foo: "bar" },
          portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
          bandwidth: { ingressRate: 1000 },
          "default-route": ["10.1.0.1"],
          deviceID: "0000:00:1f.6",
          unknownReserved: 1,
          "example.com/mine": 2,
        },
      ]),
    );
    expect(sel).toEqual({
      name: "net-a",
      namespace: "pods",
      ips: ["10.1.0.5/24", "fd00::5"],
      mac: "02:00:00:00:00:01",
      interfaceRequest: "net5",
      infinibandGuid: "c2:11:22:33:44:55:66:77",
      cniArgs: { foo: "bar" },
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
      bandwidth: { ingressRate: 1000 },
      defaultRoute: ["10.1.0.1"],
      deviceID: "0000:00:1f.6",
    });
    expect(parse('[{"name":"n","interfaceRequest":"net7"}]')[0]?.interfaceRequest).toBe("net7");
  });

  it("N4.1.2.1.4 a 20-byte InfiniBand hardware address is a valid mac", () => {
    const ib = Array.from({ length: 20 }, () => "0a").join(":");
    expect(parse(JSON.stringify([{ name: "n", mac: ib }]))[0]?.mac).toBe(ib);
  });

  it.each([
    ["{}", "list of objects"],
    ['[{"name":"a"},"b"]', "must be an object"],
    ['[{"namespace":"x"}]', '"name" is required'],
    ['[{"name":5}]', '"name" must be a string'],
    ['[{"name":"a"', "not valid JSON"],
  ])("B21 %s is refused with 7 (%s)", (v, text) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining(text) });
  });

  it.each([
    ['[{"name":"a","ips":["999.1.1.1"]}]', "999.1.1.1"],
    ['[{"name":"a","ips":["1.2.3.4/99"]}]', "1.2.3.4/99"],
    ['[{"name":"a","ips":[]}]', "non-empty"],
    ['[{"name":"a","ips":"10.0.0.1"}]', "non-empty list"],
    ['[{"name":"a","mac":"zz:00:00:00:00:00"}]', "zz:00"],
    ['[{"name":"a","mac":"02:00:00:00:01"}]', "02:00:00:00:01"],
  ])("B22 N4.1.2.1.3 N4.1.2.1.4 %s is refused with 7 naming the value", (v, text) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining(text) });
  });

  it.each([
    '[{"name":"a","interface":"abcdefghijklmnop"}]',
    '[{"name":"a","interface":"eth0/1"}]',
    '[{"name":"a","interface":"eth0"}]',
    '[{"name":"a","interface":"net1","interfaceRequest":"net2"}]',
  ])("B23 N4.1.2.1.5 %s is refused with 7", (v) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining("interface") });
  });

  it.each(['[{"name":"A"}]', '[{"name":"a","namespace":".."}]', '[{"name":"%2e"}]'])("B20 %s is refused with 7", (v) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining("DNS-1123") });
  });

  it("N4.1.x an error names the item, the key and the value", () => {
    expect(err('[{"name":"ok"},{"name":"b","namespace":"x","default-route":["not-an-ip"]}]').message).toBe(
      'networks annotation item 2 (x/b): key "default-route" must be a list of gateway IP addresses, got ["not-an-ip"]',
    );
  });
});
