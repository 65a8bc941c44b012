/**
 * `plexus doctor`'s view of Multus's objects in the cluster (M18): asked by name, one list each,
 * and named with the one kubectl command that deletes what remains (never the CRD); a list the
 * credentials may not make says so instead of guessing.
 */
import { describe, expect, it } from "vitest";
import { checkMultusObjects, type Lister } from "../../../src/ops/multus-leftovers";

type Line = { level: string; msg: string };

async function run(present: readonly string[] | Error): Promise<Line[]> {
  const lines: Line[] = [];
  const list: Lister = async (path, query) => {
    if (present instanceof Error) throw present;
    const name = query.fieldSelector!.replace("metadata.name=", "");
    const kind = path.split("/").at(-1)!.replace(/s$/, "");
    return { items: present.includes(`${kind}/${name}`) ? [{ metadata: { name } }] : [] };
  };
  await checkMultusObjects(list, (level, _subject, msg) => void lines.push({ level, msg }));
  return lines;
}

describe("M18 Multus's objects in the cluster", () => {
  it("M18 its DaemonSet still there: a warning, with the command for it and the rest", async () => {
    const lines = await run(["daemonset/kube-multus-ds", "serviceaccount/multus"]);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.level).toBe("warning");
    expect(lines[0]!.msg).toMatch(/still exists: each start of its pods runs Multus's entrypoint/);
    expect(lines[0]!.msg).toMatch(
      /: kubectl -n kube-system delete daemonset\/kube-multus-ds serviceaccount\/multus$/,
    );
  });

  it("M18 only its ServiceAccount, RBAC and ConfigMap left: named as unused", async () => {
    const rest = ["serviceaccount/multus", "configmap/multus-cni-config", "clusterrole/multus"];
    const lines = await run([...rest, "clusterrolebinding/multus"]);
    expect(lines[0]!.msg).toMatch(
      new RegExp(
        "remain, unused since its DaemonSet is gone: kubectl -n kube-system delete " +
          `${rest.join(" ")} clusterrolebinding/multus$`,
      ),
    );
  });

  it("M18 all gone: ok; not allowed to ask: ok, and how to find out", async () => {
    expect(await run([])).toEqual([
      { level: "ok", msg: "Multus's DaemonSet, ServiceAccount, RBAC and ConfigMap are gone" },
    ]);
    const denied = await run(new Error("HTTP 403 Forbidden"));
    expect(denied[0]!.level).toBe("ok");
    expect(denied[0]!.msg).toMatch(/cannot tell .*HTTP 403.*--kubeconfig of an administrator/);
  });
});
