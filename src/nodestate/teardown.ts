/**
 * Tearing attachments down in reverse (N7.2): every one is tried, failures are collected (in
 * teardown order) with the attachment they belong to. Shared by DEL, by ADD's rollback, by the
 * retry of failed DELs (pending.ts) and by GC.
 *
 * The call's deadline (`delTimeoutSeconds`) is shared between the attachments: each gets what is
 * left divided by the number still to go, and what one leaves unused passes on to the next. So
 * slow secondary networks (torn down first) cannot use up the time of the default network, which
 * comes last and always gets at least its share: its DEL runs. An attachment whose DEL could not
 * even start (no time left) is marked `notRun`: it never counts as a failed DEL (del-failures.ts).
 *
 * D1: the claims whose devices backed what was torn down lose Plexus's entries for them
 * (claim-status.ts, loaded only then); `keep` names the attachments that stay up
 * besides (a hot-plug's), whose entries are stated again.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { vetRecorded } from "../gate/gate";
import type { KubeApi } from "../cluster/kube-api";
import { delNetworkList, type ExecDeps } from "../libcni/conflist";
import type { ContainerLock } from "../store/container-lock";
import { removeDeviceInfo } from "./device-info";
import { podOf, type Attachment } from "./record";
import {
  describeAttachment,
  runtimeConfFor,
  type DelegateEnvDeps,
  type RuntimeFor,
} from "./runtime-conf";

/**
 * What a teardown uses: libcni's (the plugins, the result cache, the log), the delegates'
 * environment, and Kubernetes for the claims' status (built on first use; undefined: none).
 */
export interface TeardownDeps extends ExecDeps, DelegateEnvDeps {
  lock?: ContainerLock;
  kube?: (() => Promise<KubeApi | undefined>) | undefined;
}

/** One attachment whose DEL failed, and why. */
export interface TeardownFailure {
  attachment: Attachment;
  error: CniError;
  /** Its DEL never started (the call's deadline had passed): not a failure of its delegates. */
  notRun?: boolean;
}

export async function teardown(
  attachments: readonly Attachment[],
  ctx: RuntimeFor,
  req: CniRequest,
  conf: PlexusConf,
  deps: TeardownDeps,
  scope: { keep?: readonly Attachment[] } = {},
): Promise<TeardownFailure[]> {
  const failures: TeardownFailure[] = [];
  const order = [...attachments].reverse();
  for (const [i, att] of order.entries()) {
    const share = shareOf(ctx.deadline, order.length - i);
    if (share && share.at <= Date.now()) {
      const error = new CniError(
        Code.TryAgainLater,
        `DEL of ${describeAttachment(att)}: not run, the call's deadline passed (${share.key} in ` +
          `Plexus's config); the next DEL runs it`,
      );
      deps.log.warn({ network: att.network, ifName: att.ifName }, error.message);
      failures.push({ attachment: att, error, notRun: true });
      continue;
    }
    try {
      // The recorded config, vetted again: a policy that refuses it now refuses its DEL too.
      const vetted = vetRecorded(att, { policy: conf, podNamespace: podOf(req.args)?.namespace });
      await delNetworkList(
        vetted,
        runtimeConfFor(att, { ...ctx, ...(share ? { deadline: share } : {}) }, req, conf, deps),
        deps,
      );
      // M10: the device-info copy goes with it
      if (att.device) removeDeviceInfo(att, ctx, conf, deps.log);
      deps.log.debug({ network: att.network, ifName: att.ifName }, "detached");
    } catch (err) {
      const error = asCniError(err).withContext(`DEL of ${describeAttachment(att)}`);
      deps.log.error(
        { network: att.network, ifName: att.ifName, err: error.message },
        "detach failed",
      );
      failures.push({ attachment: att, error });
    }
  }
  const torn = order.filter((att) => !failures.some((f) => f.attachment === att));
  if (torn.some((att) => att.device?.claim)) {
    const stay = [...(scope.keep ?? []), ...failures.map((f) => f.attachment)];
    const { containerId } = ctx;
    const { syncAfterTeardown } = await import("./claim-status");
    await syncAfterTeardown({ torn, stay, containerId, pod: podOf(req.args), deps });
  }
  return failures;
}

/**
 * This attachment's part of the call's deadline: what is left, divided by the attachments still to
 * go.
 */
function shareOf(deadline: RuntimeFor["deadline"], toGo: number): RuntimeFor["deadline"] {
  if (!deadline) return undefined;
  const now = Date.now();
  return { at: now + Math.floor((deadline.at - now) / toGo), key: deadline.key };
}

/**
 * The failed attachments in attachment order (failures come in teardown order), for a record, each
 * with why its DEL failed (what `plexus records` shows).
 */
export function failedAttachments(failures: readonly TeardownFailure[]): Attachment[] {
  return failures
    .map((f) => ({ ...f.attachment, lastDelError: { code: f.error.code, msg: f.error.message } }))
    .reverse();
}
