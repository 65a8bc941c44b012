/**
 * Result versions with the real bridge plugin (C5.1, C2.4): the runtime asks for each cniVersion
 * and gets the default network's result in exactly that shape, matching what the namespace holds;
 * delegates speaking an older version are converted up. Subnets 10.214.x.0/24.
 */
import { describe, expect, it } from "vitest";
import { ALL_VERSIONS } from "../../src/cni/version";
import {
  describeE2e,
  links,
  NOTHING_LEFT,
  routes,
  useE2eScope,
  type Netns,
} from "../support/netns";
import {
  bridgeNet,
  defaultNet,
  expectNetnsMatchesResult,
  expectOk,
  expectSilentOk,
  hostLocal,
  plexusConf,
  type Result100,
} from "./networks";

const t = useE2eScope();

function attachEnv(ns: Netns, containerId: string) {
  return { CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
}

const eth0Addresses = (ns: Netns) => links(ns.name).find((l) => l.name === "eth0")?.addresses ?? [];

describeE2e("e2e result versions with real bridge delegates", () => {
  describe.each(ALL_VERSIONS.map((v, i) => ({ version: v, octet: 10 + i })))(
    "C5.1 C2.4 the runtime asks for $version",
    ({ version, octet }) => {
      it(`C5.1 C2.4 ADD prints the default network's result as ${version}, matching the namespace; DEL leaves nothing`, async () => {
        const { scope } = t;
        const ns = scope.addNetns();
        const subnet = `10.214.${octet}`;
        // Delegates speak 1.0.0 (the plugins' newest); Plexus converts for the runtime.
        const conf = plexusConf(
          scope,
          [
            defaultNet(scope, `${subnet}.0/24`),
            bridgeNet({
              name: "second",
              bridge: scope.bridgeName(),
              ipam: hostLocal(scope, `${subnet}.128/25`),
            }),
          ],
          {
            cniVersion: version,
          },
        );
        const env = attachEnv(ns, `ctr-v${octet}`);
        const out = expectOk(await scope.run("ADD", conf, env));
        expect(out.cniVersion).toBe(version);
        const address = `${subnet}.2/24`;
        expect(eth0Addresses(ns)).toEqual([address]);

        if (version === "0.1.0" || version === "0.2.0") {
          // libcni types/020: ip4 (+ routes inside it), no interfaces, no ips list.
          expect(Object.keys(out).sort()).toEqual(["cniVersion", "dns", "ip4"]);
          expect(out.ip4).toEqual({
            ip: address,
            gateway: `${subnet}.1`,
            routes: [{ dst: "0.0.0.0/0" }],
          });
        } else {
          const r = out as unknown as Result100 & { ips: Array<Record<string, unknown>> };
          expect(r.ips).toHaveLength(1);
          // 0.3.x/0.4.0 (types/040) carry "version" per IP; 1.x does not.
          const versionKey = version.startsWith("0.") ? { version: "4" } : {};
          expect(r.ips[0]).toEqual({
            address,
            gateway: `${subnet}.1`,
            interface: 2,
            ...versionKey,
          });
          expect(r.routes).toEqual([{ dst: "0.0.0.0/0" }]);
          expectNetnsMatchesResult(ns, r, { ifName: "eth0" });
        }
        expect(routes(ns.name)).toContainEqual({
          dst: "default",
          gateway: `${subnet}.1`,
          dev: "eth0",
        });
        if (version === "0.4.0" || version.startsWith("1."))
          expectSilentOk(await scope.run("CHECK", conf, env));
        expectSilentOk(await scope.run("DEL", conf, env));
        expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      });
    },
  );

  it.each([
    { delegateVersion: "0.2.0", octet: 30 },
    { delegateVersion: "0.3.1", octet: 31 },
    { delegateVersion: "0.4.0", octet: 32 },
  ])(
    "C5.1 B58 a bridge delegate speaking $delegateVersion: the runtime still gets a 1.1.0 result with the namespace's address",
    async ({ delegateVersion, octet }) => {
      const { scope } = t;
      const ns = scope.addNetns();
      const subnet = `10.214.${octet}`;
      const delegate = { ...defaultNet(scope, `${subnet}.0/24`), cniVersion: delegateVersion };
      const conf = plexusConf(scope, [delegate], { cniVersion: "1.1.0" });
      const env = attachEnv(ns, `ctr-d${octet}`);
      const out = expectOk(await scope.run("ADD", conf, env)) as unknown as Result100;
      expect(out.cniVersion).toBe("1.1.0");
      expect(out.ips?.map((i) => ({ address: i.address, gateway: i.gateway }))).toEqual([
        { address: `${subnet}.2/24`, gateway: `${subnet}.1` },
      ]);
      expect(out.ips?.[0]).not.toHaveProperty("version");
      expect(eth0Addresses(ns)).toEqual([`${subnet}.2/24`]);
      if (delegateVersion !== "0.2.0") expectNetnsMatchesResult(ns, out, { ifName: "eth0" });
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    },
  );
});
