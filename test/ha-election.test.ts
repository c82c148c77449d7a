/**
 * The LeaderElector on the real apiserver, two electors in this process with short durations
 * (lease 3 s, renew deadline 2 s, retry 0.3 s): one leads; stop() hands over at once; a leader
 * whose renewals fail is no longer leader by the renew deadline, and the other takes over only
 * after a full lease duration without a change, never overlapping.
 */
import { k8s } from '../k8s/client.js';
import { LeaderElector, NotLeaderError, fenceWrites } from '../k8s/leader-election.js';
import { pollUntil } from '../scripts/env/process.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';

const LEASE = 3_000;
const RENEW = 2_000;
const RETRY = 300;
let ns: string;
const electors: LeaderElector[] = [];

beforeAll(async () => {
  ns = await freshNamespace('ha-elect');
});
afterAll(async () => {
  await Promise.all(electors.map((e) => e.stop()));
});

/** A KubeConfig whose every request fails while `broken.now` (the apiserver unreachable for this process only). */
function breakable(kc: k8s.KubeConfig, broken: { now: boolean }): k8s.KubeConfig {
  const b = Object.create(kc) as k8s.KubeConfig;
  b.applySecurityAuthentication = async (ctx) => {
    if (broken.now) throw new Error('connection refused (simulated)');
    return kc.applySecurityAuthentication(ctx);
  };
  return b;
}

function elector(name: string, identity: string, kc = kubeConfig(), events: string[] = []): LeaderElector {
  const e = new LeaderElector({
    kubeConfig: kc,
    namespace: ns,
    name,
    identity,
    leaseDurationMs: LEASE,
    renewDeadlineMs: RENEW,
    retryPeriodMs: RETRY,
    onStartedLeading: () => events.push(`${identity} started`),
    onStoppedLeading: () => events.push(`${identity} stopped`),
    log: () => undefined,
  });
  electors.push(e);
  return e;
}

const lease = (name: string) =>
  kubeConfig().makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ name, namespace: ns });
const holder = async (name: string) => (await lease(name)).spec?.holderIdentity ?? '';

it('elects one leader; stop() releases the Lease and the standby takes over at once', async () => {
  const events: string[] = [];
  const a = elector('handover', 'a', kubeConfig(), events);
  const b = elector('handover', 'b', kubeConfig(), events);
  a.start();
  await pollUntil(() => a.isLeader(), 10_000, 'a to lead');
  b.start();
  await pollUntil(() => b.observedLeader() === 'a', 10_000, 'b to see a lead');
  expect({
    a: a.isLeader(),
    b: b.isLeader(),
    holder: await holder('handover'),
    since: a.leaderSince() instanceof Date,
  }).toEqual({ a: true, b: false, holder: 'a', since: true });

  const stoppedAt = performance.now();
  await a.stop();
  expect(a.isLeader()).toBe(false);
  // Released, not left to expire: right after stop() the Lease names nobody (or already b).
  expect(['', 'b']).toContain(await holder('handover'));
  await pollUntil(() => b.isLeader(), 10_000, 'b to take over');
  const handoverMs = performance.now() - stoppedAt;
  console.log(`handover after stop(): ${Math.round(handoverMs)} ms`);
  // b's next retry (0.36 s) takes it; an unreleased Lease would hold b off for a lease duration
  // after a's last renewal, so the lease duration is the bound, with seconds to spare for a loaded machine.
  expect(handoverMs).toBeLessThan(LEASE);
  expect(await holder('handover')).toBe('b');
  expect(events).toEqual(['a started', 'a stopped', 'b started']);
});

it('a leader whose renewals fail stops leading by the renew deadline; the other takes over only after the lease duration, never both at once', async () => {
  const broken = { now: false };
  const a = elector('deadline', 'a', breakable(kubeConfig(), broken));
  const b = elector('deadline', 'b');
  a.start();
  await pollUntil(() => a.isLeader(), 10_000, 'a to lead');
  b.start();
  await pollUntil(() => b.observedLeader() === 'a', 10_000, 'b to see a lead');

  // Fencing: a KubeConfig fenced by a refuses writes as soon as a is no longer leader.
  const fenced = fenceWrites(kubeConfig(), { leadership: a }).makeApiClient(k8s.CoreV1Api);
  const writeAsA = () =>
    fenced.createNamespacedConfigMap({ namespace: ns, body: { metadata: { generateName: 'fenced-' } } });
  await expect(writeAsA()).resolves.toBeDefined();

  let overlap = false;
  const watching = setInterval(() => (overlap ||= a.isLeader() && b.isLeader()), 10);
  try {
    const brokenAt = performance.now();
    broken.now = true;
    // Every look at a is timed (wall clock, taken before the look): a seen leading a renew deadline
    // after its last renewal started is the bug. A late look on a loaded machine only sees a out,
    // so no slack is needed.
    let lastSeenLeading = 0;
    await pollUntil(
      () => {
        const at = Date.now();
        const leading = a.isLeader();
        if (leading) lastSeenLeading = at;
        return !leading;
      },
      10_000,
      'a to lose leadership',
      10,
    );
    const lostMs = performance.now() - brokenAt;
    // a can no longer write: the Lease keeps the renewTime of a's last renewal, taken at the start
    // of that attempt (its renew deadline counts from there) and before its write, so b cannot
    // have seen the renewal earlier.
    const lastRenewal = await lease('deadline');
    expect(lastRenewal.spec?.holderIdentity).toBe('a');
    const renewedAt = new Date(lastRenewal.spec!.renewTime!).getTime();
    // + 1: Date.now() counts whole milliseconds.
    expect(lastSeenLeading).toBeLessThan(renewedAt + RENEW + 1);
    await pollUntil(() => b.isLeader(), 20_000, 'b to take over', 10);
    const takeoverMs = performance.now() - brokenAt;
    const tookAt = Date.now();
    console.log(
      `renewals failing: a not leader after ${Math.round(lostMs)} ms, b leads after ${Math.round(takeoverMs)} ms`,
    );
    // b waited a full lease duration after it saw a's last renewal: on the one clock of this
    // process, from that renewal's renewTime to b leading, which load can only lengthen.
    expect(tookAt - renewedAt).toBeGreaterThanOrEqual(LEASE);
    // b does take over once the lease has run out: two lease durations leave a loaded machine's
    // late retries and slow apiserver seconds; a b that never takes a dead leader's Lease fails.
    expect(takeoverMs).toBeLessThanOrEqual(2 * LEASE);
    await expect(writeAsA()).rejects.toBeInstanceOf(NotLeaderError);
  } finally {
    clearInterval(watching);
  }
  expect(overlap).toBe(false);
  expect(await holder('deadline')).toBe('b');

  // The apiserver is back for a: it sees b's renewals and stays a standby.
  broken.now = false;
  await pollUntil(() => a.observedLeader() === 'b', 10_000, 'a to see b lead');
  expect(a.isLeader()).toBe(false);
});
