/**
 * The Stage's coordination.k8s.io Lease (ADR-0012's lock, as kubectl shows it). The per-Stage lock
 * workflow serializes activations; the Lease is taken after its grant, and only when it is free,
 * expired or already ours: another live holder (a second installation, a stale activation) is
 * never overwritten, the activation waits for it within bounded retries. Owned by the Stage.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { API_VERSION, LABEL_STAGE_NAME } from '../api/group.js';
import { apiMessage, apiStatus, k8s } from '../k8s/client.js';
import { labelValue, stageLeaseName } from '../shared/names.js';
import { kubeTime } from '../shared/format.js';
import { observeStageHandoff } from '../telemetry/metrics.js';
import { permanent } from './k8s-errors.js';
import type { CoreDeps } from './deps.js';
import { STAGE_LEASE_HELD } from '../stage-lock/contract.js';
import { jsonPointer } from '../shared/json-pointer.js';
import { microTime, nowMicros } from '../k8s/events.js';

export const LEASE_SECONDS = 60;
/** Who released the Lease last: a holder taking back its own release (a retry) is no handoff. */
const RELEASED_BY = 'konfidence.cloud/released-by';

const stageRegarding = (namespace: string, stage: string) => ({
  apiVersion: API_VERSION,
  kind: 'Stage',
  namespace,
  name: stage,
});

function expired(spec: k8s.V1LeaseSpec, now: Date): boolean {
  const renewed = spec.renewTime ?? spec.acquireTime;
  if (!spec.holderIdentity || !renewed) return true;
  return new Date(renewed).getTime() + (spec.leaseDurationSeconds ?? 0) * 1000 < now.getTime();
}

/** releasedAt: the Lease was free, released by its previous holder then (ms); for the handoff metric. */
type Outcome = { ok: true; releasedAt?: number } | { ok: false; heldBy: string; until: string };

/**
 * Takes (or renews) the Lease for `holder` if free, expired or ours; conditional on resourceVersion.
 * `whenTakeable` is called each time a read found it so, just before the write that takes it.
 */
export async function takeStageLease(
  deps: CoreDeps,
  namespace: string,
  stage: string,
  stageUid: string | undefined,
  holder: string,
  durationSeconds: number,
  renewOnly = false,
  whenTakeable?: () => void,
): Promise<Outcome> {
  const name = stageLeaseName(stage);
  for (let attempt = 0; attempt < 5; attempt++) {
    const now = new Date();
    // The copy this worker last wrote, if it has one: the write below is conditional on it.
    const known = attempt === 0 ? deps.knownLeases?.take(namespace, name) : undefined;
    let lease: k8s.V1Lease | undefined = known;
    if (!known) {
      try {
        lease = await deps.leases.readNamespacedLease({ name, namespace });
      } catch (err) {
        if (apiStatus(err) !== 404) throw err;
      }
    }
    const micro = new k8s.V1MicroTime(now.getTime());
    if (!lease) {
      if (renewOnly) return { ok: false, heldBy: '(nobody: the Lease was deleted)', until: kubeTime(now) };
      whenTakeable?.();
      try {
        const created = await deps.leases.createNamespacedLease({
          namespace,
          body: {
            metadata: {
              name,
              namespace,
              labels: { [LABEL_STAGE_NAME]: labelValue(stage) },
              ...(stageUid
                ? { ownerReferences: [{ apiVersion: API_VERSION, kind: 'Stage', name: stage, uid: stageUid }] }
                : {}),
            },
            spec: {
              holderIdentity: holder,
              leaseDurationSeconds: durationSeconds,
              acquireTime: micro,
              renewTime: micro,
              leaseTransitions: 0,
            },
          },
        });
        deps.knownLeases?.remember(created);
        return { ok: true };
      } catch (err) {
        if (apiStatus(err) === 409) continue;
        throw err;
      }
    }
    const spec = lease.spec ?? {};
    const ours = spec.holderIdentity === holder;
    if (!ours && (renewOnly || !expired(spec, now))) {
      // A copy may be stale: only what the apiserver says now is an answer.
      if (known) continue;
      const renewed = new Date(spec.renewTime ?? spec.acquireTime ?? now);
      return {
        ok: false,
        heldBy: spec.holderIdentity ?? '(nobody)',
        until: kubeTime(new Date(renewed.getTime() + (spec.leaseDurationSeconds ?? 0) * 1000)),
      };
    }
    whenTakeable?.();
    lease.spec = {
      ...spec,
      holderIdentity: holder,
      leaseDurationSeconds: durationSeconds,
      renewTime: micro,
      ...(ours ? {} : { acquireTime: micro, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
    };
    if (stageUid && !lease.metadata?.ownerReferences?.length) {
      lease.metadata = {
        ...lease.metadata,
        ownerReferences: [{ apiVersion: API_VERSION, kind: 'Stage', name: stage, uid: stageUid }],
      };
    }
    try {
      deps.knownLeases?.remember(await deps.leases.replaceNamespacedLease({ name, namespace, body: lease }));
      const releasedByOther = !spec.holderIdentity && lease.metadata?.annotations?.[RELEASED_BY] !== holder;
      const released = releasedByOther && spec.renewTime ? new Date(spec.renewTime).getTime() : NaN;
      return Number.isFinite(released) ? { ok: true, releasedAt: released } : { ok: true };
    } catch (err) {
      // A conflict, or a copy of a Lease deleted since: read it and decide again.
      if (apiStatus(err) !== 409 && !(known && apiStatus(err) === 404)) throw err;
    }
  }
  throw new Error(`Lease ${namespace}/${name} kept changing under us`);
}

/**
 * The release in one request, as a JSON patch that tests the holder is still `holder`: true when it
 * went through; false when it could not tell (not ours, no annotations yet, no Lease), for a read.
 */
async function releaseAtOnce(deps: CoreDeps, namespace: string, name: string, holder: string): Promise<boolean> {
  const body = [
    { op: 'test', path: '/spec/holderIdentity', value: holder },
    { op: 'remove', path: '/spec/holderIdentity' },
    { op: 'add', path: '/spec/renewTime', value: microTime(nowMicros()) },
    { op: 'add', path: jsonPointer('metadata', 'annotations', RELEASED_BY), value: holder },
  ];
  try {
    deps.knownLeases?.remember(
      await deps.leases.patchNamespacedLease(
        { name, namespace, body },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
      ),
    );
    return true;
  } catch (err) {
    if (apiStatus(err) === 422 || apiStatus(err) === 404) return false;
    throw err;
  }
}

/** Clears the Lease's holder if it is still ours; a later holder's claim is left alone. */
export async function releaseStageLease(
  deps: CoreDeps,
  namespace: string,
  stage: string,
  holder: string,
): Promise<void> {
  const name = stageLeaseName(stage);
  // Every release but a Lease's first finds the annotation map a release before made.
  if (await releaseAtOnce(deps, namespace, name, holder)) return;
  for (let attempt = 0; attempt < 5; attempt++) {
    let lease: k8s.V1Lease;
    try {
      lease = await deps.leases.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (apiStatus(err) === 404) return;
      throw err;
    }
    if (lease.spec?.holderIdentity !== holder) return;
    // As client-go's leader election does: a released Lease's renewTime says when it was released.
    lease.spec = { ...lease.spec, holderIdentity: undefined, renewTime: new k8s.V1MicroTime(Date.now()) };
    lease.metadata = { ...lease.metadata, annotations: { ...lease.metadata?.annotations, [RELEASED_BY]: holder } };
    try {
      deps.knownLeases?.remember(await deps.leases.replaceNamespacedLease({ name, namespace, body: lease }));
      return;
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
    }
  }
}

/**
 * The Stage handoff time: from the previous holder's release to this take, counted only when this
 * activation existed at the release (it was waiting, or about to); a Stage that stood idle before
 * it was asked for is no handoff. Off the handoff's path (one read after the take); never throws.
 */
async function observeHandoff(deps: CoreDeps, holder: string, releasedAt: number, createdAt?: string): Promise<void> {
  const takenAt = Date.now();
  const [namespace, name] = holder.split('/');
  try {
    // The workflow passes when it was created (it loaded the object); else it is read.
    const va =
      createdAt || !namespace || !name ? undefined : await deps.objects.get('VectorActivation', namespace, name);
    const creation = createdAt ?? va?.metadata.creationTimestamp;
    const created = creation ? new Date(creation).getTime() : NaN;
    // creationTimestamp has whole seconds: an activation created in the second of the release counts.
    if (Number.isFinite(created) && created <= releasedAt) observeStageHandoff((takenAt - releasedAt) / 1000);
  } catch {
    // A metric is not worth a failure.
  }
}

export function leaseActivities(deps: CoreDeps) {
  return {
    /**
     * Takes the Stage's Lease. Held by another live holder: a retryable failure saying who and
     * until when, so the activity's bounded retries wait for it to be released or to expire.
     */
    async acquireStageLease(
      namespace: string,
      stage: string,
      stageUid: string,
      holder: string,
      durationSeconds = LEASE_SECONDS,
      whenTakeable?: () => void,
      createdAt?: string,
    ): Promise<void> {
      const outcome = await takeStageLease(
        deps,
        namespace,
        stage,
        stageUid,
        holder,
        durationSeconds,
        false,
        whenTakeable,
      );
      if (outcome.ok && outcome.releasedAt !== undefined)
        void observeHandoff(deps, holder, outcome.releasedAt, createdAt);
      if (!outcome.ok) {
        throw ApplicationFailure.retryable(
          `Lease ${namespace}/${stageLeaseName(stage)} of Stage ${stage} is held by ${outcome.heldBy} until ${outcome.until}; waiting for it to be released or to expire`,
          STAGE_LEASE_HELD,
        );
      }
    },

    /**
     * Renews the Lease until cancelled, in one long activity that heartbeats: an activation that runs
     * for a day adds two events to its history, not one per renewal. Renewal failures are logged and
     * become Events on the Stage; losing the Lease to another holder ends the renewal.
     */
    async keepStageLease(
      namespace: string,
      stage: string,
      holder: string,
      durationSeconds = LEASE_SECONDS,
    ): Promise<string> {
      const ctx = Context.current();
      const renewEvery = (durationSeconds * 1000) / 3;
      let failing = false;
      for (let next = Date.now() + renewEvery; ; next += renewEvery) {
        while (Date.now() < next) {
          ctx.heartbeat();
          await ctx.sleep(Math.min(1_000, Math.max(0, next - Date.now())));
        }
        try {
          const outcome = await takeStageLease(deps, namespace, stage, undefined, holder, durationSeconds, true);
          if (!outcome.ok) {
            const note = `activation ${holder} lost the Lease of Stage ${stage} to ${outcome.heldBy}; the Stage's lock workflow still serializes activations`;
            deps.log(note, { level: 'warn', namespace, stage, activation: holder.split('/')[1] });
            await deps.event(stageRegarding(namespace, stage), 'Warning', 'StageLeaseLost', note);
            return note;
          }
          if (failing)
            await deps.event(
              stageRegarding(namespace, stage),
              'Normal',
              'StageLeaseRenewed',
              `activation ${holder} renews the Lease again`,
            );
          failing = false;
        } catch (err) {
          const note = `activation ${holder} could not renew the Lease of Stage ${stage}: ${apiMessage(err)}`;
          deps.log(note, { level: 'warn', namespace, stage, activation: holder.split('/')[1] });
          if (!failing) await deps.event(stageRegarding(namespace, stage), 'Warning', 'StageLeaseRenewFailed', note);
          failing = true;
          // A refusal (RBAC, say) will not mend itself: stop renewing and say so instead of retrying forever.
          if (permanent(err)) return note;
        }
      }
    },

    /**
     * Renews the Lease once, for `durationSeconds` (a gate's length); a Lease taken over by
     * another holder is said as keepStageLease says it, and not taken back.
     */
    async renewStageLease(namespace: string, stage: string, holder: string, durationSeconds: number): Promise<void> {
      const outcome = await takeStageLease(deps, namespace, stage, undefined, holder, durationSeconds, true);
      if (outcome.ok) return;
      const note = `activation ${holder} lost the Lease of Stage ${stage} to ${outcome.heldBy}; the Stage's lock workflow still serializes activations`;
      deps.log(note, { level: 'warn', namespace, stage, activation: holder.split('/')[1] });
      await deps.event(stageRegarding(namespace, stage), 'Warning', 'StageLeaseLost', note);
    },

    async releaseStageLease(namespace: string, stage: string, holder: string): Promise<void> {
      await releaseStageLease(deps, namespace, stage, holder);
    },
  };
}
