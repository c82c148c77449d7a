/**
 * The renewal of a Stage's Lease (activities/lease.ts keepStageLease) against an in-memory Lease
 * whose apiserver fails, recovers, refuses or hands the Lease to another holder: what it says on
 * the Stage (`StageLeaseRenewFailed` once per failing spell, `StageLeaseRenewed`, `StageLeaseLost`)
 * and when it stops renewing. The renewal period is a third of the duration: 30 ms here.
 */
import { leaseAttempts } from '../../workflows/policies.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { leaseActivities } from '../../activities/lease.js';
import type { CoreDeps } from '../../activities/deps.js';
import { k8s } from '../../k8s/client.js';

const quiet = { logger: new DefaultLogger('ERROR', () => undefined) };
const refused = (code: number) => new k8s.ApiException(code, `HTTP ${code}`, { message: `refused with ${code}` }, {});
const HOLDER = 'shop/shop-to-2';
const DURATION_SECONDS = 0.09;

type Step = 'ok' | number | 'taken';

/** A Lease held by HOLDER; each renewal (a read and a replace) meets the next step of `script`, then another holder. */
function fakeDeps(script: Step[]) {
  const said: { reason: string; type: string; note: string; stage: string }[] = [];
  let lease: k8s.V1Lease = {
    metadata: { name: 'konfidence-stage-shop', namespace: 'shop', resourceVersion: '1' },
    spec: { holderIdentity: HOLDER, leaseDurationSeconds: 60, renewTime: new k8s.V1MicroTime() },
  };
  let renewals = 0;
  const leases = {
    async readNamespacedLease() {
      // Past the script the Lease is taken: a renewal that should have stopped ends there, not never.
      const step = script[renewals++] ?? 'taken';
      if (typeof step === 'number') throw refused(step);
      if (step === 'taken')
        lease = {
          ...lease,
          spec: { ...lease.spec, holderIdentity: 'another-installation', renewTime: new k8s.V1MicroTime() },
        };
      return structuredClone(lease);
    },
    async replaceNamespacedLease({ body }: { body: k8s.V1Lease }) {
      lease = {
        ...body,
        metadata: { ...body.metadata, resourceVersion: String(Number(lease.metadata!.resourceVersion) + 1) },
      };
      return lease;
    },
  };
  const deps = {
    leases,
    log: () => undefined,
    event: async (regarding: { name: string }, type: string, reason: string, note: string) =>
      void said.push({ stage: regarding.name, type, reason, note }),
  } as unknown as CoreDeps;
  return { deps, said, renewals: () => renewals };
}

const keep = (deps: CoreDeps) =>
  new MockActivityEnvironment({}, quiet).run(() =>
    leaseActivities(deps).keepStageLease('shop', 'shop', HOLDER, DURATION_SECONDS),
  );

it('failing renewals say StageLeaseRenewFailed once, a recovery says StageLeaseRenewed, and a Lease taken by another holder says StageLeaseLost and ends the renewal', async () => {
  const { deps, said, renewals } = fakeDeps(['ok', 503, 503, 'ok', 'ok', 'taken']);
  const note = await keep(deps);
  expect(renewals()).toBe(6);
  expect(said.map((e) => [e.stage, e.type, e.reason])).toEqual([
    ['shop', 'Warning', 'StageLeaseRenewFailed'],
    ['shop', 'Normal', 'StageLeaseRenewed'],
    ['shop', 'Warning', 'StageLeaseLost'],
  ]);
  expect(said[0]!.note).toBe('activation shop/shop-to-2 could not renew the Lease of Stage shop: refused with 503');
  expect(note).toBe(
    "activation shop/shop-to-2 lost the Lease of Stage shop to another-installation; the Stage's lock workflow still serializes activations",
  );
  expect(said[2]!.note).toBe(note);
});

it('a refusal that will not mend itself (403) says StageLeaseRenewFailed and stops renewing instead of retrying forever', async () => {
  const { deps, said, renewals } = fakeDeps(['ok', 403, 'ok']);
  const note = await keep(deps);
  expect(renewals()).toBe(2);
  expect(said.map((e) => e.reason)).toEqual(['StageLeaseRenewFailed']);
  expect(note).toBe('activation shop/shop-to-2 could not renew the Lease of Stage shop: refused with 403');
});

// How long a foreign Lease is waited for: the retries' attempts whose waits fit in leaseWaitSeconds
// (1 s, then 1.5× more each, at most 10 s), since their count is what ends the retries.
it.each([
  [0, 1],
  [1, 2],
  [30, 7],
  [180, 22],
])('a wait of %i s allows %i attempts', (seconds, attempts) => {
  expect(leaseAttempts(seconds)).toBe(attempts);
});
