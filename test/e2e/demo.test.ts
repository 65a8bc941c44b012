/**
 * The README's main job, `npm run demo` (scripts/demo-cluster.mjs), end to end on the built
 * dist/plexus: two pods of a file-backed cluster attached through the real reference plugins, pod
 * to pod over a secondary network, a DRA pod explained, both DELed, nothing left. The script
 * checks each step itself and exits non-zero on the first that fails; this test holds it to that.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { expect, it } from "vitest";
import { describeE2e } from "../support/netns";

const SCRIPT = join(import.meta.dirname, "../../scripts/demo-cluster.mjs");

describeE2e("the demo (npm run demo)", () => {
  it("M10 N4.1.1 N4.1.2 two pods attach, reach each other, a DRA pod's VFs are explained, DEL leaves nothing", () => {
    const r = spawnSync(process.execPath, [SCRIPT], { encoding: "utf8", timeout: 120_000 });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("Demo OK");
    // Each DRA network gets its own VF, in PCI order although the claim was allocated .2 first.
    expect(r.stdout).toMatch(
      /device: 0000:07:00\.1 of example\.com\/sriov-vf \(ResourceClaim trader-vfs[\s\S]*device: 0000:07:00\.2 of/,
    );
    expect(r.stdout).toMatch(/✓ nothing: no interface in either pod/);
  });
});
