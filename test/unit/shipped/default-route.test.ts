/**
 * The pod's default routes as dist/plexus sets them (route netlink through bun:ffi, which only Bun
 * has: netns/rtnetlink.ts), run by Bun (set-routes.ts) without root: in a user and network
 * namespace of its own (`unshare -rn`), where a "pod" namespace held by a sleeping process has a
 * veth pair and a default route already. Under Node the same verb step runs `nsenter` and `ip`.
 */
import { execFile, execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { bunPath, harnessFile, scratch } from "./bun-harness";

/**
 * Runs in the new namespaces: the pod's namespace (a sleep in a namespace of its own), its
 * addresses and an old default route, then the harness ($1 Bun, $2 the harness, $3 its routes)
 * with `nsenter` and `ip` replaced by /bin/false (a mount namespace of its own), so that only
 * netlink can set a route, then the pod's default routes as `ip -j` lists them: three JSON lines.
 */
const IN_NAMESPACES = `set -e
unshare -n sleep 600 &
pod=$!
while [ "$(readlink /proc/$pod/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.01; done
ns=/proc/$pod/ns/net
nsenter --net=$ns sh -c 'ip link add v0 type veth peer name v1
  ip addr add 10.1.0.2/24 dev v0; ip -6 addr add fd00:1::2/64 dev v0 nodad
  ip link set v0 up; ip link set v1 up; ip route add default via 10.1.0.3 dev v0'
hide='for tool in /usr/bin/nsenter /bin/nsenter /usr/sbin/ip /sbin/ip /usr/bin/ip /bin/ip; do
  [ -e "$tool" ] && mount --bind /bin/false "$(readlink -f "$tool")"; done; exec "$@"'
unshare -m sh -c "$hide" sh "$1" "$2" "{\\"netns\\":\\"$ns\\",\\"routes\\":$3}"
nsenter --net=$ns ip -j route show default
nsenter --net=$ns ip -6 -j route show default
kill $pod`;

function userNamespaces(): boolean {
  try {
    execFileSync("unshare", ["-rn", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const haveNamespaces = userNamespaces();
const skip = !haveNamespaces && !process.env.CI;
const why = haveNamespaces ? "" : " (skipped: `unshare -rn` fails here: no user namespaces)";

async function setRoutes(routes: Array<{ gateway: string; ifName: string }>) {
  const { env } = scratch();
  const args = ["-rn", "sh", "-c", IN_NAMESPACES, "sh", bunPath(), harnessFile("set-routes")];
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      "unshare",
      [...args, JSON.stringify(routes)],
      { env: { ...process.env, ...env }, timeout: 50_000 },
      (err, out, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(out)),
    ),
  );
  const [reply, v4, v6] = stdout.trim().split("\n");
  return { reply: JSON.parse(reply!), v4: JSON.parse(v4!), v6: JSON.parse(v6!) };
}

describe("M4 the pod's default route over route netlink, by Bun in its own namespaces", () => {
  it.skipIf(skip)(`M4 each family's default route is replaced, IPv4 and IPv6${why}`, async () => {
    const got = await setRoutes([
      { gateway: "10.1.0.1", ifName: "v0" },
      { gateway: "fd00:1::1", ifName: "v0" },
    ]);
    expect(got.reply).toEqual({ ok: true });
    expect(got.v4).toEqual([expect.objectContaining({ gateway: "10.1.0.1", dev: "v0" })]);
    expect(got.v6).toEqual([expect.objectContaining({ gateway: "fd00:1::1", dev: "v0" })]);
  });

  it.skipIf(skip)(
    `M4 a gateway outside the interface's networks: 103 naming it${why}`,
    async () => {
      const got = await setRoutes([{ gateway: "10.9.9.9", ifName: "v0" }]);
      expect(got.reply).toMatchObject({ ok: false, code: Code.VerificationFailed });
      expect(got.reply.message).toContain(
        "cannot route the pod's default traffic via 10.9.9.9 on v0",
      );
    },
  );
});
