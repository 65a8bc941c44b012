/**
 * What a pod may make Plexus run (src/npwg/policy.ts): allowed plugin types and bounded work per
 * call.
 */
import { describe, expect, it } from "vitest";
import type { ConfList } from "../../../src/cni/conf";
import { checkPlanBounds, checkPluginTypes, typesOf } from "../../../src/npwg/policy";

const list = (name: string, types: string[], ipam?: string): ConfList => ({
  cniVersion: "1.0.0",
  name,
  plugins: types.map((type, i) => ({ type, ...(i === 0 && ipam ? { ipam: { type: ipam } } : {}) })),
});

describe("allowedPluginTypes", () => {
  it("N7.4 plugin and IPAM types both count; unset allows all", () => {
    const l = list("n", ["macvlan", "tuning"], "dhcp");
    expect(typesOf(l)).toEqual(["macvlan", "dhcp", "tuning"]);
    expect(() => checkPluginTypes(l, undefined, "app/n")).not.toThrow();
    expect(() => checkPluginTypes(l, ["macvlan", "tuning", "dhcp"], "app/n")).not.toThrow();
  });

  it("N7.4 a type not listed fails with 7 naming the network, the type, the list and the key", () => {
    expect(() =>
      checkPluginTypes(list("n", ["host-device"]), ["bridge", "macvlan", "host-local"], "app/n"),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringMatching(
          /network app\/n uses plugin type "host-device", which "allowedPluginTypes".*bridge, macvlan, host-local/,
        ),
      }),
    );
    expect(() =>
      checkPluginTypes(list("n", ["bridge"], "dhcp"), ["bridge", "host-local"], "app/n"),
    ).toThrow(expect.objectContaining({ message: expect.stringContaining('"dhcp"') }));
  });
});

describe("bounded work per call", () => {
  const bounds = { maxPluginsPerNetwork: 4, maxDelegateCalls: 6 };

  it("B25 a network with more plugins than maxPluginsPerNetwork fails with 7 naming it and the key", () => {
    expect(() =>
      checkPlanBounds([{ network: "app/big", conf: list("big", Array(5).fill("tuning")) }], bounds),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringMatching(
          /network app\/big has 5 plugins, more than the 4 .*"maxPluginsPerNetwork"/,
        ),
      }),
    );
  });

  it("B25 more delegate runs in total than maxDelegateCalls fails with 7 naming the count and the key", () => {
    const nets = [1, 2].map((i) => ({
      network: `app/n${i}`,
      conf: list(`n${i}`, Array(4).fill("tuning")),
    }));
    expect(() => checkPlanBounds(nets, bounds)).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringMatching(
          /2 networks would run 8 delegates, more than the 6 .*"maxDelegateCalls"/,
        ),
      }),
    );
    expect(() => checkPlanBounds(nets.slice(0, 1), bounds)).not.toThrow();
  });
});
