/**
 * A hot-plug reconcile's Warning events, once each: the daemon tells `plexus hotplug` which events
 * its last reconcile of the pod recorded (`--sent-events`, their keys); the same event (reason and
 * message) is then only logged at debug level, not recorded again, while a different one is
 * recorded. The keys of this reconcile's Warning events, recorded or not, go back in its report,
 * so a failing edit, its retries and the later edits that fail the same way make one event.
 */
import { createHash } from "node:crypto";
import type { KubeApi, PodEvent } from "../cluster/kube-api";
import type { Logger } from "../log/types";

/** Keys passed at most: a reconcile's warnings are one per selection and a few more. */
const MAX_KEYS = 256;
const KEY = /^[0-9a-f]{16}$/;

/** An event's key: its reason and message, hashed (a message may be long, and any text). */
function eventKey(event: PodEvent): string {
  return createHash("sha256")
    .update(`${event.reason}\n${event.message}`)
    .digest("hex")
    .slice(0, 16);
}

/** `--sent-events a,b`: the keys, what is not one left out. */
export function parseSentEvents(value: string | undefined): ReadonlySet<string> {
  const keys = (value ?? "").split(",").filter((k) => KEY.test(k));
  return new Set(keys.slice(0, MAX_KEYS));
}

type KubeFactory = () => Promise<KubeApi | undefined>;

export class SentEvents {
  private readonly keys = new Set<string>();

  constructor(
    private readonly before: ReadonlySet<string>,
    private readonly log: Logger,
  ) {}

  /** The keys of the Warning events this reconcile recorded or left out. */
  get warned(): string[] {
    return [...this.keys].slice(0, MAX_KEYS);
  }

  /** `factory`, whose client records a Warning event only when the last reconcile did not. */
  wrap(factory: KubeFactory): KubeFactory {
    let wrapped: Promise<KubeApi | undefined> | undefined;
    return () => {
      wrapped ??= factory().then((api) => (api ? this.around(api) : undefined));
      return wrapped;
    };
  }

  private around(api: KubeApi): KubeApi {
    const recordEvent: KubeApi["recordEvent"] = async (pod, event) => {
      if (event.type !== "Warning") return api.recordEvent(pod, event);
      const key = eventKey(event);
      this.keys.add(key);
      const what = { reason: event.reason, message: event.message };
      if (this.before.has(key)) {
        this.log.debug(what, "hot-plug: the pod's last reconcile recorded this event; not again");
        return;
      }
      this.log.warn(what, "hot-plug: Warning event recorded on the pod");
      return api.recordEvent(pod, event);
    };
    // The client's own methods run on the client itself (a class may keep private fields).
    return new Proxy(api, {
      get: (target, prop) => {
        if (prop === "recordEvent") return recordEvent;
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}
