/**
 * The renewal of a Stage's Lease (activities/lease.ts keepStageLease) against an in-memory Lease
 * whose apiserver fails, recovers, refuses or hands the Lease to another holder: what it says on
 * the Stage (`StageLeaseRenewFailed` once per failing spell, `StageLeaseRenewed`, `StageLeaseLost`)
 * and when it stops renewing. The renewal period is a third of the duration: 30 ms here.
 */
import { leaseAttempts } from '../../workflows/policies.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { leaseActivities, releaseStageLease, takeStageLease } from '../../activities/lease.js';
import { KnownLeases } from '../../activities/known-leases.js';
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

/** One Lease as the apiserver keeps it: a write names the resourceVersion it read, or is refused (409). */
function versionedLeases(initial: k8s.V1Lease) {
  let stored = structuredClone(initial);
  const requests: string[] = [];
  const stamp = (lease: k8s.V1Lease) => {
    stored = {
      ...structuredClone(lease),
      metadata: { ...lease.metadata, resourceVersion: String(Number(stored.metadata!.resourceVersion) + 1) },
    };
    return structuredClone(stored);
  };
  const leases = {
    async readNamespacedLease() {
      requests.push('GET');
      return structuredClone(stored);
    },
    async replaceNamespacedLease({ body }: { body: k8s.V1Lease }) {
      requests.push('PUT');
      if (body.metadata?.resourceVersion !== stored.metadata!.resourceVersion) throw refused(409);
      return stamp(body);
    },
    async patchNamespacedLease({ body }: { body: { op: string; path: string; value?: string }[] }) {
      requests.push('PATCH');
      const test = body.find((op) => op.op === 'test');
      if (test && stored.spec?.holderIdentity !== test.value) throw refused(422);
      return stamp({ ...stored, spec: { ...stored.spec, holderIdentity: undefined } });
    },
    /** Another installation takes the Lease behind the worker's back. */
    takenElsewhere: (holder: string) =>
      stamp({ ...stored, spec: { ...stored.spec, holderIdentity: holder, renewTime: new k8s.V1MicroTime() } }),
    holder: () => stored.spec?.holderIdentity,
  };
  return { leases, requests };
}

describe('the Lease a worker released or took is written without a read first', () => {
  const free: k8s.V1Lease = {
    metadata: { name: 'konfidence-stage-shop', namespace: 'shop', resourceVersion: '7' },
    spec: { leaseDurationSeconds: 60, renewTime: new k8s.V1MicroTime(0) },
  };
  const depsOf = (leases: unknown) =>
    ({ leases, knownLeases: new KnownLeases(), log: () => undefined }) as unknown as CoreDeps;

  it('the next activation takes a Lease its predecessor released in one request', async () => {
    const { leases, requests } = versionedLeases(free);
    const deps = depsOf(leases);
    await takeStageLease(deps, 'shop', 'shop', undefined, 'shop/shop-to-2', 60);
    await releaseStageLease(deps, 'shop', 'shop', 'shop/shop-to-2');
    requests.length = 0;
    const taken = await takeStageLease(deps, 'shop', 'shop', undefined, 'shop/shop-to-3', 60);
    expect(taken.ok).toBe(true);
    expect(requests).toEqual(['PUT']);
    expect(leases.holder()).toBe('shop/shop-to-3');
  });

  it('a Lease another installation took since is read again and not overwritten', async () => {
    const { leases, requests } = versionedLeases(free);
    const deps = depsOf(leases);
    await takeStageLease(deps, 'shop', 'shop', undefined, 'shop/shop-to-2', 60);
    await releaseStageLease(deps, 'shop', 'shop', 'shop/shop-to-2');
    leases.takenElsewhere('other-installation/shop-to-9');
    requests.length = 0;
    const taken = await takeStageLease(deps, 'shop', 'shop', undefined, 'shop/shop-to-3', 60);
    expect(taken).toMatchObject({ ok: false, heldBy: 'other-installation/shop-to-9' });
    expect(requests).toEqual(['PUT', 'GET']);
    expect(leases.holder()).toBe('other-installation/shop-to-9');
  });

  it('keeps the Leases it wrote last, up to its bound', () => {
    const known = new KnownLeases(2);
    for (const name of ['a', 'b', 'c'])
      known.remember({ metadata: { name, namespace: 'shop', resourceVersion: '1' }, spec: {} });
    expect(known.size).toBe(2);
    expect(known.take('shop', 'a')).toBeUndefined();
    expect(known.take('shop', 'c')?.metadata?.name).toBe('c');
    // Handed out once: a second take finds nothing, so a failed write reads.
    expect(known.take('shop', 'c')).toBeUndefined();
  });
});
