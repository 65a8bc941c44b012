import { describe, expect, it } from "vitest";
import {
  DEFAULT_MAX_SELECTIONS,
  parseNetworksAnnotation,
  type ParseAnnotationOptions,
} from "../../../src/npwg/annotation";

const parse = (value: string, opts: ParseAnnotationOptions = {}) =>
  parseNetworksAnnotation(value, "pods", { reservedIfName: "eth0", ...opts });

function err(
  value: string,
  opts: ParseAnnotationOptions = {},
  podNamespace = "pods",
): { code: number; message: string } {
  try {
    parseNetworksAnnotation(value, podNamespace, { reservedIfName: "eth0", ...opts });
  } catch (e) {
    return e as { code: number; message: string };
  }
  throw new Error(`expected ${JSON.stringify(value)} to be refused`);
}
const json = (...items: unknown[]) => JSON.stringify(items);

describe("N4.1 N4.1.1 comma form", () => {
  it("N4.1.1 names, namespace/name and Multus's @ifname; whitespace around items ignored; the pod's namespace by default", () => {
    expect(parse(" net-a , other/net-b@eth5,net-c@net9 ")).toEqual([
      { name: "net-a", namespace: "pods" },
      { name: "net-b", namespace: "other", interfaceRequest: "eth5" },
      { name: "net-c", namespace: "pods", interfaceRequest: "net9" },
    ]);
    expect(parse("\tnet-a\n,\n other/net-b@eth5 ")).toHaveLength(2);
  });

  it("N4.1 an empty or blank annotation selects nothing", () => {
    expect(parse("")).toEqual([]);
    expect(parse("   ")).toEqual([]);
    expect(parse("\n\t")).toEqual([]);
  });

  it("N4.2 the same network twice is two selections, in order", () => {
    expect(parse("net-a,net-b,net-a")).toEqual([
      { name: "net-a", namespace: "pods" },
      { name: "net-b", namespace: "pods" },
      { name: "net-a", namespace: "pods" },
    ]);
  });

  it.each([
    [",", 1, "is empty"],
    ["a,,b", 2, "is empty"],
    ["a, ,b", 2, "is empty"],
    ["ns/", 1, 'name "" is not a valid DNS-1123 label: it is empty'],
    ["/n", 1, 'namespace "" is not a valid DNS-1123 label: it is empty'],
    ["a/b/c", 1, "more than one '/'"],
    ["n@", 1, 'interface "" is invalid: it is empty'],
    ["n@x@y", 1, "more than one '@'"],
    ["ok,n@x@y", 2, "more than one '@'"],
  ])("B19 N4.1.x %j is refused with 7 naming item %i and the problem", (v, n, why) => {
    const e = err(v);
    expect(e.code).toBe(7);
    expect(e.message).toMatch(new RegExp(`^networks annotation item ${n} \\(`));
    expect(e.message).toContain(why);
  });

  it("B19 the message quotes the item as written", () => {
    expect(err("a,ns/").message).toBe(
      'networks annotation item 2 ("ns/"): name "" is not a valid DNS-1123 label: it is empty',
    );
  });

  it.each([
    "A",
    "-a",
    "x".repeat(64),
    ".",
    "..",
    "%2e",
    "ns/UPPER",
    "UPPER/n",
    "../n",
    "%2e/n",
    "a.b",
  ])("B20 N3.3 %j (not DNS-1123) is refused with 7 before any request", (v) => {
    expect(err(v)).toMatchObject({
      code: 7,
      message: expect.stringContaining("not a valid DNS-1123 label"),
    });
  });

  it.each(["ns / net-a", "net-a @eth1", "net-a@ eth1", "net a", "ns/ net-a"])(
    "N4.1.1 whitespace inside an item %j is refused (documented choice), not squeezed",
    (v) => {
      expect(err(v)).toMatchObject({
        code: 7,
        message: expect.stringMatching(/DNS-1123|whitespace/),
      });
    },
  );

  it.each([
    [`n@${"a".repeat(16)}`, "longer than 15 bytes"],
    ["n@eth0/1", "it contains '/'"],
    ["n@a:b", "':'"],
    ["n@.", "'.' and '..'"],
    ["n@..", "'.' and '..'"],
  ])("B23 N4.1.2.1.5 interface in %j is refused with 7 (%s)", (v, why) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining(why) });
  });

  it("B23 N4.1.2.1.5 the default network's interface cannot be requested; the reserved name is the caller's CNI_IFNAME", () => {
    expect(err("net-a@eth0")).toMatchObject({
      code: 7,
      message: expect.stringContaining('interface "eth0" is the default network\'s interface'),
    });
    expect(err("net-a@pod0", { reservedIfName: "pod0" })).toMatchObject({
      code: 7,
      message: expect.stringContaining('"pod0"'),
    });
    expect(parse("net-a@eth0", { reservedIfName: "pod0" })).toEqual([
      { name: "net-a", namespace: "pods", interfaceRequest: "eth0" },
    ]);
  });

  it("N4.1.1 an invalid pod namespace is reported as the pod's, not as the user's item", () => {
    expect(err("net-a", {}, "Bad_NS").message).toContain(`namespace (the pod's) "Bad_NS"`);
    expect(err(json({ name: "net-a" }), {}, "Bad_NS").message).toContain(
      `namespace (the pod's) "Bad_NS"`,
    );
    expect(err(json({ name: "net-a", namespace: "Bad_NS" })).message).toContain(
      `key "namespace" "Bad_NS"`,
    );
  });
});

describe("B25 the number of selections is bounded", () => {
  it("B25 more networks than maxSelections (default 32) is refused with the count, in both forms", () => {
    expect(DEFAULT_MAX_SELECTIONS).toBe(32);
    const many = Array.from({ length: 500 }, (_, i) => `n${i}`);
    expect(err(many.join(","))).toMatchObject({
      code: 7,
      message: expect.stringContaining("requests 500 networks; at most 32"),
    });
    expect(err(json(...many.map((name) => ({ name }))))).toMatchObject({
      code: 7,
      message: expect.stringContaining("requests 500 networks; at most 32"),
    });
  });

  it("B25 exactly the maximum passes; one more does not; the option overrides the default", () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`).join(",");
    expect(parse(names(32))).toHaveLength(32);
    expect(err(names(33)).message).toContain("33 networks");
    expect(parse(names(40), { maxSelections: 40 })).toHaveLength(40);
    expect(err(names(3), { maxSelections: 2 }).message).toContain("at most 2");
  });

  it("B25 the count is checked before any item is looked at", () => {
    // Every item is invalid, yet the error is about the count: no per-item work was done first.
    expect(err(Array(40).fill("BAD").join(","))).toMatchObject({
      code: 7,
      message: expect.stringContaining("40 networks"),
    });
    expect(err(json(...Array(40).fill(5)))).toMatchObject({
      code: 7,
      message: expect.stringContaining("40 networks"),
    });
  });
});

describe("N4.1.2 JSON form", () => {
  it("N4.1.2 N4.1.2.1.1 N4.1.2.1.2 name required; namespace missing or empty means the pod's", () => {
    expect(
      parse(
        json(
          { name: "net-a" },
          { name: "net-b", namespace: "x" },
          { name: "net-c", namespace: "" },
        ),
      ),
    ).toEqual([
      { name: "net-a", namespace: "pods" },
      { name: "net-b", namespace: "x" },
      { name: "net-c", namespace: "pods" },
    ]);
  });

  it("N4.1.2 detected after trimming; an empty list selects nothing", () => {
    expect(parse(`  \n${json({ name: "net-a" })}  `)).toEqual([
      { name: "net-a", namespace: "pods" },
    ]);
    expect(parse("[]")).toEqual([]);
  });

  it("N4.1.2 M4 every key is read: ips, mac, interface, infiniband-guid, cni-args, portMappings, bandwidth, default-route, deviceID", () => {
    const [sel] = parse(
      json({
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
      }),
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
  });

  it("N4.1.2 unknown reserved keys and reverse-domain keys are ignored", () => {
    expect(
      parse(json({ name: "n", futureKey: { x: 1 }, "example.com/mine": 2, "k8s.io/x": [1] })),
    ).toEqual([{ name: "n", namespace: "pods" }]);
  });

  it("M4 interfaceRequest (the old name of interface) alone, or equal to interface, sets the interface", () => {
    expect(parse(json({ name: "n", interfaceRequest: "net7" }))[0]?.interfaceRequest).toBe("net7");
    expect(
      parse(json({ name: "n", interface: "net7", interfaceRequest: "net7" }))[0]?.interfaceRequest,
    ).toBe("net7");
  });

  it("M4 interface and interfaceRequest that disagree are refused naming both", () => {
    expect(err(json({ name: "a", interface: "net1", interfaceRequest: "net2" })).message).toBe(
      'networks annotation item 1 ("pods/a"): keys "interface" ("net1") and "interfaceRequest" ' +
        '("net2") disagree',
    );
  });

  it.each([
    ["6-byte, colons", "02:00:00:00:00:01"],
    ["6-byte, hyphens, upper case", "02-AB-CD-EF-00-01"],
    ["20-byte InfiniBand", Array.from({ length: 20 }, () => "0a").join(":")],
  ])("N4.1.2.1.4 a %s hardware address is a valid mac", (_what, mac) => {
    expect(parse(json({ name: "n", mac }))[0]?.mac).toBe(mac);
  });

  it.each([
    ["10.1.0.5"],
    ["10.1.0.5/32"],
    ["0.0.0.0/0"],
    ["fd00::5/128"],
    ["FD00::0005"],
    ["::ffff:10.1.0.5"],
  ])("N4.1.2.1.3 %s is a valid requested IP", (ip) => {
    expect(parse(json({ name: "n", ips: [ip] }))[0]?.ips).toEqual([ip]);
  });

  it.each([
    ["{}", "must be a list of objects, got {}"],
    ['{"name":"a"}', "must be a list of objects"],
    ['[{"name":"a"},"b"]', 'item 2: must be an object, got "b"'],
    ['[{"name":"a"},null]', "item 2: must be an object, got null"],
    ["[[]]", "item 1: must be an object, got []"],
    ['[{"namespace":"x"}]', 'item 1: key "name" is required'],
    ['[{"name":5}]', 'item 1: key "name" must be a string, got 5'],
    ['[{"name":null}]', 'key "name" must be a string, got null'],
    ['[{"name":"a","namespace":7}]', 'key "namespace" must be a string, got 7'],
    ['[{"name":"a"', "not valid JSON"],
    ['[{"name":"a"}] trailing', "not valid JSON"],
  ])("B21 %s is refused with 7 (%s)", (v, text) => {
    expect(err(v)).toMatchObject({ code: 7, message: expect.stringContaining(text) });
  });

  it.each([
    [{ ips: ["999.1.1.1"] }, '"999.1.1.1"'],
    [{ ips: ["1.2.3.4/99"] }, '"1.2.3.4/99"'],
    [{ ips: ["1.2.3.4/33"] }, '"1.2.3.4/33"'],
    [{ ips: ["fd00::1/129"] }, '"fd00::1/129"'],
    [{ ips: ["1.2.3.4/024"] }, '"1.2.3.4/024"'],
    [{ ips: ["fe80::1%eth0"] }, '"fe80::1%eth0"'],
    [{ ips: ["01.2.3.4"] }, '"01.2.3.4"'],
    [{ ips: [" 10.0.0.1"] }, '" 10.0.0.1"'],
    [{ ips: ["10.0.0.1", 5] }, "has 5"],
    [{ ips: [] }, "non-empty list"],
    [{ ips: "10.0.0.1" }, "non-empty list"],
    [{ mac: "zz:00:00:00:00:00" }, '"zz:00:00:00:00:00"'],
    [{ mac: "02:00:00:00:01" }, '"02:00:00:00:01"'],
    [{ mac: "02:00:00:00:00:01:02" }, "6-byte Ethernet or 20-byte InfiniBand"],
    [{ mac: "02:00-00:00-00:01" }, "6-byte Ethernet"],
    [{ mac: "0200.0000.0001" }, "6-byte Ethernet"],
    [{ mac: "02:00:00:00:00:1" }, "6-byte Ethernet"],
    [{ mac: "01:00:5e:00:00:01" }, "not a unicast Ethernet address"],
    [{ mac: "ff:ff:ff:ff:ff:ff" }, "not a unicast Ethernet address"],
    [{ mac: "00:00:00:00:00:00" }, "not a unicast Ethernet address"],
    [{ mac: 2 }, 'key "mac" must be a string'],
  ])("B22 N4.1.2.1.3 N4.1.2.1.4 %j is refused with 7 naming the value", (extra, text) => {
    const e = err(json({ name: "a", ...extra }));
    expect(e.code).toBe(7);
    expect(e.message).toMatch(/^networks annotation item 1 \("pods\/a"\): key "(ips|mac)"/);
    expect(e.message).toContain(text);
  });

  it.each([
    [
      { interface: "abcdefghijklmnop" },
      'key "interface" "abcdefghijklmnop" is invalid: it is longer than 15 bytes',
    ],
    [{ interface: "eth0/1" }, 'key "interface" "eth0/1" is invalid'],
    [{ interface: "a b" }, "whitespace"],
    [{ interface: "" }, "it is empty"],
    [{ interface: "eth0" }, 'key "interface" "eth0" is the default network\'s interface'],
    [
      { interfaceRequest: "eth0" },
      'key "interfaceRequest" "eth0" is the default network\'s interface',
    ],
    [{ interfaceRequest: "x/y" }, 'key "interfaceRequest" "x/y" is invalid'],
    [{ interface: 1 }, 'key "interface" must be a string, got 1'],
  ])("B23 N4.1.2.1.5 %j is refused with 7", (extra, text) => {
    expect(err(json({ name: "a", ...extra }))).toMatchObject({
      code: 7,
      message: expect.stringContaining(text),
    });
  });

  it.each([
    [{ name: "A" }, 'key "name" "A"'],
    [{ name: "-a" }, 'key "name" "-a"'],
    [{ name: "x".repeat(64) }, "64 characters long"],
    [{ name: "." }, 'key "name" "."'],
    [{ name: ".." }, 'key "name" ".."'],
    [{ name: "%2e" }, 'key "name" "%2e"'],
    [{ name: "" }, 'key "name" "" is not a valid DNS-1123 label: it is empty'],
    [{ name: "a", namespace: ".." }, 'key "namespace" ".."'],
    [{ name: "a", namespace: "%2e" }, 'key "namespace" "%2e"'],
    [{ name: "a", namespace: "a/b" }, 'key "namespace" "a/b"'],
  ])("B20 N3.3 %j is refused with 7 before any request", (sel, text) => {
    expect(err(json(sel))).toMatchObject({ code: 7, message: expect.stringContaining(`${text}`) });
    expect(err(json(sel)).message).toContain("DNS-1123");
  });

  it.each([
    [{ "cni-args": "x" }, 'key "cni-args" must be an object, got "x"'],
    [{ "cni-args": [1] }, 'key "cni-args" must be an object'],
    [{ portMappings: {} }, 'key "portMappings" must be a list, got {}'],
    [{ bandwidth: [] }, 'key "bandwidth" must be an object, got []'],
    [
      { "default-route": "10.0.0.1" },
      'key "default-route" must be a list of gateway IP addresses, got "10.0.0.1"',
    ],
    [{ "default-route": ["10.0.0.1/24"] }, 'key "default-route" must be a list'],
    [{ "default-route": [null] }, 'key "default-route" must be a list'],
    [{ deviceID: 3 }, 'key "deviceID" must be a string, got 3'],
    [{ "infiniband-guid": true }, 'key "infiniband-guid" must be a string, got true'],
  ])(
    "M4 N4.1.x a wrong type for %j is refused with 7 naming the key and the value",
    (extra, text) => {
      expect(err(json({ name: "a", ...extra }))).toMatchObject({
        code: 7,
        message: expect.stringContaining(text),
      });
    },
  );

  it("N4.1.x an error names the item, the key and the value", () => {
    expect(
      err(json({ name: "ok" }, { name: "b", namespace: "x", "default-route": ["not-an-ip"] }))
        .message,
    ).toBe(
      'networks annotation item 2 ("x/b"): key "default-route" must be a list of gateway IP ' +
        'addresses, got ["not-an-ip"]',
    );
  });

  it("B17 prototype keys anywhere in the annotation are refused with 7, not merged into delegate args", () => {
    expect(err('[{"name":"a","cni-args":{"__proto__":{"polluted":true}}}]')).toMatchObject({
      code: 7,
      message: expect.stringContaining('"__proto__"'),
    });
    expect(err('[{"name":"a","constructor":1}]')).toMatchObject({
      code: 7,
      message: expect.stringContaining('"constructor"'),
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("B12 deeply nested JSON (e.g. in cni-args) is refused with 7, no stack overflow later", () => {
    const deep = `[{"name":"a","cni-args":${'{"x":'.repeat(5000)}1${"}".repeat(5000)}}]`;
    expect(err(deep)).toMatchObject({
      code: 7,
      message: expect.stringContaining("nested more than"),
    });
  });

  it("N4.1.x a huge value is cut in the message", () => {
    const e = err(json({ name: "a".repeat(10_000) }));
    expect(e.code).toBe(7);
    expect(e.message.length).toBeLessThan(500);
  });
});

describe("M19 a selection's resourceName", () => {
  it("M19 is read from the JSON form; an empty one asks for nothing (Go's omitempty)", () => {
    expect(parse(json({ name: "n", resourceName: "example.com/vf-fast" }))).toEqual([
      { name: "n", namespace: "pods", resourceName: "example.com/vf-fast" },
    ]);
    expect(parse(json({ name: "n", resourceName: "" }))).toEqual([
      { name: "n", namespace: "pods" },
    ]);
  });

  it.each([
    ["not a string", 5, 'key "resourceName" must be a string, got 5'],
    ["no domain", "vf", "must be <domain>/<name>, with exactly one '/' between them"],
    ["two slashes", "example.com/vf/x", "must be <domain>/<name>, with exactly one '/'"],
    ["a path", "example.com/..", "has '..': a device ID is one name, never a path"],
    ["a control character", "example.com/v\u0007f", "has U+0007 at position 14"],
    ["a leading '-'", "-x/vf", "starts with '-'"],
    ["over 317 characters", `${"d".repeat(300)}/${"n".repeat(20)}`, "more than 317"],
  ])("M19 %s is refused with 7 naming the item and the key", (_what, resourceName, problem) => {
    const e = err(json({ name: "sriov-a", resourceName }));
    expect(e.code).toBe(7);
    expect(e.message).toMatch(
      /^networks annotation item 1 \("pods\/sriov-a"\): key "resourceName"/,
    );
    expect(e.message).toContain(problem);
  });
});
