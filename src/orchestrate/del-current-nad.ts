/**
 * DEL's second try (M7, B33): a NAD attachment whose recorded config failed DEL is tried with the
 * NAD's current config, when the admin has changed it, so a fixed NAD un-wedges its pods. What is
 * still a failure afterwards goes to ../nodestate/del-failures.ts.
 */
import type { CniRequest } from "../cni/env";
import { asCniError } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import { vetReplacement } from "../gate/gate";
import { delNetworkList } from "../libcni/conflist";
import { applySelection } from "../npwg/delegate-args";
import { nadMayUseConfDir } from "../npwg/isolation";
import { resolveNadConfig } from "../npwg/nad";
import { podOf, type Attachment } from "../nodestate/record";
import { runtimeConfFor, type RuntimeFor } from "../nodestate/runtime-conf";
import type { TeardownFailure } from "../nodestate/teardown";
import { FsNetworkSource } from "../planning/network-source";
import type { Deps } from "./deps";

/**
 * The failed NAD attachments tried once more with the NAD's current config, when it differs from
 * the recorded one (the admin fixed it). Only what the delegate gate accepts as a replacement runs
 * (gate.ts vetReplacement: the same policy as ADD, the same network name and plugin types), and an
 * attachment whose interface is still in the pod's namespace afterwards stays a failure: the
 * record keeps it until the recorded attachment is really gone. Best effort: no Kubernetes, no
 * NAD, a config that does not resolve or is refused, or the same config, and the failure stands.
 */
export async function retryWithCurrentNads(
  failures: TeardownFailure[],
  ctx: RuntimeFor,
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<TeardownFailure[]> {
  if (!failures.some((f) => f.attachment.selection) || !deps.kube) return failures;
  const kube = await deps.kube().catch(() => undefined);
  if (!kube) return failures;
  const source = new FsNetworkSource(conf.confDir, kube);
  const left: TeardownFailure[] = [];
  for (const f of failures) {
    const repaired = await delWithCurrentNad(f, { source, ctx, req, conf, deps }).catch(
      (err: unknown) => {
        deps.log.warn(
          {
            network: f.attachment.network,
            ifName: f.attachment.ifName,
            why: asCniError(err).message,
          },
          "the NAD's current config was not used for this DEL",
        );
        return false;
      },
    );
    if (!repaired) left.push(f);
  }
  return left;
}

/** One failed attachment's DEL with its NAD's current config; true when it is really gone. */
async function delWithCurrentNad(
  f: TeardownFailure,
  call: { source: FsNetworkSource; ctx: RuntimeFor; req: CniRequest; conf: PlexusConf; deps: Deps },
): Promise<boolean> {
  const { ctx, req, conf, deps } = call;
  const current = await currentNadAttachment(f.attachment, call.source, conf);
  if (!current) return false;
  const podNamespace = podOf(req.args)?.namespace;
  const vetted = vetReplacement(f.attachment, current, { policy: conf, podNamespace });
  await delNetworkList(vetted, runtimeConfFor(current, ctx, req, conf, deps), deps);
  if (ctx.netns !== "" && (await deps.netns.linkExists(ctx.netns, f.attachment.ifName))) {
    deps.log.warn(
      { network: f.attachment.network, ifName: f.attachment.ifName },
      "the NAD's current config succeeded DEL, but the interface is still there; kept",
    );
    return false;
  }
  await deps.cache.delete({
    networkName: f.attachment.conf.name,
    containerId: req.containerId,
    ifName: f.attachment.ifName,
  });
  deps.log.warn(
    { network: f.attachment.network, ifName: f.attachment.ifName, recordedErr: f.error.message },
    "the recorded config failed DEL; the NAD's current config succeeded",
  );
  return true;
}

async function currentNadAttachment(
  att: Attachment,
  source: FsNetworkSource,
  conf: PlexusConf,
): Promise<Attachment | undefined> {
  const sel = att.selection;
  const nad = sel ? await source.getNad?.(sel.namespace, sel.name) : undefined;
  if (!sel || !nad) return undefined;
  const resolved = resolveNadConfig(nad, await source.confDirFiles(), {
    confDirAllowed: nadMayUseConfDir(sel.namespace, conf),
  });
  const applied = applySelection(resolved.conf, sel);
  if (JSON.stringify(applied.conf) === JSON.stringify(att.conf)) return undefined;
  const { capabilityArgs: _old, ...rest } = att;
  return Object.keys(applied.capabilityArgs).length > 0
    ? { ...rest, conf: applied.conf, capabilityArgs: applied.capabilityArgs }
    : { ...rest, conf: applied.conf };
}
