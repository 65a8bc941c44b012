/**
 * A hot-plug reconcile's Warning events, once each (src/ops/hotplug-events.ts): the events the
 * pod's last reconcile recorded (their keys, from the daemon) are not recorded again; another one
 * is; Normal events always are; every Warning's key goes back in the report.
 */
import { describe, expect, it } from "vitest";
import type { KubeApi, PodEvent } from "../../../src/cluster/kube-api";
import { parseSentEvents, SentEvents } from "../../../src/ops/hotplug-events";
import { recordingLogger } from "../../fakes/fake-exec";

const ref = { namespace: "app", name: "web", uid: "u1" };
const refused: PodEvent = { type: "Warning", reason: "HotplugRefused", message: "app/web: no" };
const failed: PodEvent = { type: "Warning", reason: "HotplugFailed", message: "app/web: boom" };
const added: PodEvent = { type: "Normal", reason: "AddedInterface", message: "Add net2" };

class Recorder {
  readonly events: string[] = [];
  #count = 7;
  get requestCount() {
    return this.#count;
  }
  async recordEvent(_pod: typeof ref, event: PodEvent) {
    this.events.push(event.reason);
  }
}

/** One reconcile: its events through the wrapper, told `before`; what it recorded and reported. */
async function reconcile(before: readonly string[], events: PodEvent[]) {
  const api = new Recorder();
  const sent = new SentEvents(parseSentEvents(before.join(",")), recordingLogger());
  const kube = (await sent.wrap(async () => api as unknown as KubeApi)())!;
  for (const e of events) await kube.recordEvent(ref, e);
  return { recorded: api.events, warned: sent.warned, requestCount: kube.requestCount };
}

describe("hot-plug's Warning events, once each", () => {
  it("B93 a failing edit retried, then edited again the same way, records its event once", async () => {
    const first = await reconcile([], [refused, failed, added]);
    expect(first.recorded).toEqual(["HotplugRefused", "HotplugFailed", "AddedInterface"]);
    expect(first.warned).toHaveLength(2);
    const again = await reconcile(first.warned, [refused, failed, added]);
    expect(again.recorded).toEqual(["AddedInterface"]);
    expect(again.warned).toEqual(first.warned);
    // A different refusal is recorded; the one gone from the last reconcile would be again.
    const other = { ...refused, message: "app/web: another reason" };
    const changed = await reconcile(again.warned, [other, failed]);
    expect(changed.recorded).toEqual(["HotplugRefused"]);
    expect((await reconcile(changed.warned, [refused])).recorded).toEqual(["HotplugRefused"]);
    // The client's own members still answer (a class with private fields).
    expect(first.requestCount).toBe(7);
  });

  it("B93 --sent-events keeps only keys, at most 256", () => {
    expect([...parseSentEvents("0123456789abcdef,nope,,0123456789ABCDEF")]).toEqual([
      "0123456789abcdef",
    ]);
    expect(parseSentEvents(undefined).size).toBe(0);
    const many = Array.from({ length: 300 }, (_, i) => i.toString(16).padStart(16, "0"));
    expect(parseSentEvents(many.join(",")).size).toBe(256);
  });
});
