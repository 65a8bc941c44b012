/**
 * After every attachment is up: verify what the annotation asked for (N4.1.2.1.3, N4.1.2.1.4),
 * then write the pod's network-status (N5, M6), the AddedInterface event (M9) and, for the
 * attachments a ResourceClaim's devices back, the claims' device status (D1). The event names
 * every attachment in one message: one write instead of one per network keeps an ADD at
 * 3 + K API requests (pod, K NADs, status, event) where Multus makes one event per interface.
 */
import type { CniError } from "../cni/errors";
import { asCniError } from "../cni/errors";
import { toResult } from "../cni/result/convert";
import type { AnyResult } from "../cni/result/types";
import type { KubeApi } from "../cluster/kube-api";
import type { Logger } from "../log/logger";
import {
  buildNetworkStatus,
  buildNetworkStatusAnnotation,
  checkAnnotationBudget,
} from "../npwg/status";
import { verifyAttachment } from "../npwg/verify";
import type { NetworkStatus, Pod } from "../npwg/types";
import { claimsOf, syncClaimStatus } from "../nodestate/claim-status";
import type { Attachment } from "../nodestate/record";

export interface Attached {
  attachment: Attachment;
  result: AnyResult;
  /** M10: the attachment's device-info file, as the delegate left it. */
  deviceInfo?: Record<string, unknown>;
}

/** N4.1.2.1.3/4: throws VerificationFailed (103) naming the network, interface, wanted and got. */
export function verifySelection(attached: Attached): void {
  if (attached.attachment.selection)
    verifyAttachment(
      toResult(attached.result),
      attached.attachment.selection,
      attached.attachment.ifName,
    );
}

/**
 * M12: as Multus, an auxiliary chain that created no interface and no address has no status entry.
 */
function hasStatus({ attachment, result }: Attached): boolean {
  if (!attachment.auxiliary) return true;
  const r = toResult(result);
  return (r.interfaces?.length ?? 0) > 0 || (r.ips?.length ?? 0) > 0;
}

/** The AddedInterface event's words for one attachment: `Add net1 [10.1.1.5/24] from net-a`. */
export function addedInterfaceMessage({ attachment, result }: Attached): string {
  const ips = (toResult(result).ips ?? []).map((ip) => ip.address).join(",");
  return `Add ${attachment.ifName} [${ips}] from ${attachment.network}`;
}

export function networkStatuses(attached: readonly Attached[]): NetworkStatus[] {
  return attached.filter(hasStatus).map(({ attachment, result, deviceInfo }) =>
    buildNetworkStatus({
      name: attachment.network,
      isDefault: attachment.isDefault,
      ifName: attachment.ifName,
      result,
      ...(attachment.selection?.defaultRoute ? { gateway: attachment.selection.defaultRoute } : {}),
      ...(deviceInfo ? { deviceInfo } : {}),
    }),
  );
}

export async function publishNetworkStatus(
  pod: Pod,
  uid: string | undefined,
  attached: readonly Attached[],
  kube: KubeApi,
  log: Logger,
): Promise<void> {
  const value = buildNetworkStatusAnnotation(networkStatuses(attached));
  checkAnnotationBudget(pod.metadata.annotations ?? {}, value);
  // M8: the UID guards the write (a recreated pod refuses it); without the runtime's K8S_POD_UID,
  // the UID of the pod this ADD read guards it just as well.
  const guard = uid ?? pod.metadata.uid;
  const ref = {
    namespace: pod.metadata.namespace,
    name: pod.metadata.name,
    ...(guard ? { uid: guard } : {}),
  };
  await kube.setNetworkStatus(ref, value);
  // M9: best effort, after the status is written.
  const message = attached.map(addedInterfaceMessage).join("; ");
  await kube
    .recordEvent(ref, { type: "Normal", reason: "AddedInterface", message })
    .catch((err: unknown) => {
      log.warn({ err: asCniError(err).message }, "could not record the AddedInterface event");
    });
  // D1: after the pod's own status; best effort (a refusal is a warning and an Event).
  const claims = claimsOf(attached.map((a) => a.attachment));
  if (claims.size > 0)
    await syncClaimStatus({ kube, pod: ref, claims, attached, log, warnEvent: true });
}

export type { CniError };
