/**
 * status.activeController on the real apiserver (worker/publisher.ts, rules in decisions/publish.ts):
 * a new leader publishes within about one leadership check (2 s), a converged publisher writes
 * nothing, a refused endpoint publishes nothing and the loop goes on, a replica that lost
 * leadership stops writing (also when it lost it between its check and its write: the fence), and
 * the next leader overwrites the field. Leadership is a fake whose
 * isLeader() the test flips; it also counts the passes (one isLeader() call each).
 */
import { controllerStatusName, type ActiveController } from '../api/controller-status.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import {
  PLACEHOLDER_ENDPOINT,
  startPublisher,
  type Leadership,
  type Publisher,
  type PublisherOptions,
} from '../worker/publisher.js';
import { freshNamespace, kubeConfig, kubectl } from './support/cluster.js';

/** A deadline, not a measurement: a pass takes a moment unloaded and can take seconds on a loaded machine. */
const WAIT_MS = 20_000;

class FakeLeadership implements Leadership {
  leading = false;
  since: Date | undefined;
  /**
   * isLeader() calls: the publisher makes one at the start of each pass, and a second (the fence)
   * only right before a write. passesLater() counts on the first alone, so it is used only where
   * passes write nothing.
   */
  passes = 0;
  constructor(readonly identity: string) {}
  isLeader(): boolean {
    this.passes++;
    return this.leading;
  }
  leaderSince(): Date | undefined {
    return this.since;
  }
  acquire(): void {
    this.leading = true;
    this.since = new Date();
  }
  lose(): void {
    this.leading = false;
    this.since = undefined;
  }
}

const kc = kubeConfig();
const objects = new CustomObjects(kc);
const publishers: Publisher[] = [];
let ns: string;

beforeAll(async () => {
  ns = await freshNamespace('ha-publish');
});

afterEach(async () => {
  await Promise.all(publishers.splice(0).map((p) => p.stop()));
});

function start(
  o: Partial<PublisherOptions> & { leadership: Leadership; role?: PublisherOptions['role']; shard?: string },
) {
  const lines: string[] = [];
  const publisher = startPublisher({
    kubeConfig: kc,
    systemNamespace: ns,
    role: 'watcher',
    endpoint: 'http://127.0.0.5:8081',
    version: '0.1.0-test',
    log: (m) => lines.push(m),
    ...o,
  });
  publishers.push(publisher);
  return { publisher, lines };
}

async function read(name: string) {
  return objects.get('ControllerStatus', ns, name);
}

async function published(name: string): Promise<ActiveController | undefined> {
  return (await read(name))?.status?.activeController as ActiveController | undefined;
}

/**
 * Waits until `leadership`'s publisher has completed `n` more whole passes: progress of the loop,
 * not a sleep. Passes never overlap and each starts with one isLeader() call, so the start of pass
 * n + 1 means pass n has finished (read, compared and written or not). Only for passes that write
 * nothing: a writing pass makes a second call (the fence), which this would count as a pass.
 */
async function passesLater(leadership: FakeLeadership, n: number, timeoutMs: number): Promise<void> {
  const target = leadership.passes + n + 1;
  await pollUntil(
    () => leadership.passes >= target,
    timeoutMs,
    `${n} more publisher passes of ${leadership.identity}`,
    50,
  );
}

describe('status.activeController', () => {
  it('is published within about 2 s of acquiring leadership, not one publish interval later', async () => {
    const leadership = new FakeLeadership('pod-a');
    const name = controllerStatusName('stage-controller', 'shard-1');
    // The real defaults: 30 s publish interval, 2 s leadership check.
    const { lines } = start({ leadership, role: 'stage-controller', shard: 'shard-1' });
    await pollUntil(
      () => lines.some((l) => l.includes('does not lead')),
      WAIT_MS,
      'a pass that found the replica not leading',
    );
    expect(await read(name)).toBeUndefined();

    leadership.acquire();
    const acquired = Date.now();
    const value = await pollUntil(() => published(name), 30_000, 'status.activeController', 50);
    const latencyMs = Date.now() - acquired;
    console.info(`published ${latencyMs} ms after acquiring leadership`);
    // About one 2 s leadership check; the bound is a third of the 30 s publish interval (which began
    // moments ago, at start), so a publisher that waits for its next interval fails, and load does not.
    expect(latencyMs).toBeLessThanOrEqual(10_000);
    expect(value).toMatchObject({
      identity: 'pod-a',
      endpoint: 'http://127.0.0.5:8081',
      version: '0.1.0-test',
      leaderSince: leadership.since!.toISOString(),
    });

    // One request shows it: the object named after role and shard, with its printer columns.
    const object = await read(name);
    expect(object?.spec).toEqual({ role: 'stage-controller', shard: 'shard-1' });
    expect(object?.status?.phase).toBe('Active');
    const [header, row] = (await kubectl('get', 'kcs', '-n', ns)).trim().split('\n');
    expect(header?.split(/\s+/)).toEqual([
      'NAME',
      'ROLE',
      'SHARD',
      'ACTIVE',
      'ENDPOINT',
      'SINCE',
      'UPDATED',
      'PHASE',
      'AGE',
    ]);
    expect(row).toMatch(
      /^stage-controller-shard-1\s+stage-controller\s+shard-1\s+pod-a\s+http:\/\/127\.0\.0\.5:8081\s+\S+\s+\S+\s+Active\s+/,
    );
  });

  it('writes nothing once converged: resourceVersion stays the same across publish intervals', async () => {
    const leadership = new FakeLeadership('pod-c');
    leadership.acquire();
    const name = controllerStatusName('watcher', 'converge');
    start({ leadership, shard: 'converge', publishIntervalMs: 1_000, leadershipCheckMs: 200 });
    await pollUntil(() => published(name), WAIT_MS, 'status.activeController');
    const before = await read(name);
    // Two more whole passes of the leader, each a read and a comparison: neither writes.
    await passesLater(leadership, 2, WAIT_MS);
    const after = await read(name);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(after?.status?.activeController.lastUpdated).toBe(before?.status?.activeController.lastUpdated);
  });

  it.each([
    ['the shipped placeholder', PLACEHOLDER_ENDPOINT, 'placeholder'],
    ['an empty endpoint', '', 'no endpoint configured'],
  ])('refuses %s: nothing is published, the log says why, the loop goes on', async (_title, endpoint, says) => {
    const leadership = new FakeLeadership('pod-r');
    leadership.acquire();
    const shard = endpoint ? 'placeholder' : 'empty';
    const name = controllerStatusName('watcher', shard);
    const { lines } = start({ leadership, shard, endpoint, publishIntervalMs: 300, leadershipCheckMs: 200 });
    await pollUntil(
      () => lines.some((l) => l.includes('refusing to publish pod-r') && l.includes(says)),
      WAIT_MS,
      'the refusal in the log',
    );
    await passesLater(leadership, 2, WAIT_MS);
    expect(await published(name)).toBeUndefined();
    // Logged once, not once per pass.
    expect(lines.filter((l) => l.includes('refusing')).length).toBe(1);
  });

  it('stops writing when leadership is lost, and the next leader overwrites the field', async () => {
    const a = new FakeLeadership('pod-a');
    const b = new FakeLeadership('pod-b');
    const name = controllerStatusName('watcher');
    const timing = { publishIntervalMs: 500, leadershipCheckMs: 200 };
    a.acquire();
    const pa = start({ leadership: a, endpoint: 'http://127.0.0.5:8081', ...timing });
    const pb = start({ leadership: b, endpoint: 'http://127.0.0.6:8081', ...timing });
    const first = await pollUntil(() => published(name), WAIT_MS, 'pod-a published');
    expect(first.identity).toBe('pod-a');

    // pod-a loses its Lease, nobody leads for a while: nothing is written (nor cleared).
    a.lose();
    await pollUntil(
      () => pa.lines.some((l) => l.includes('pod-a does not lead')),
      WAIT_MS,
      'pod-a noticing it lost leadership',
    );
    const afterLoss = await read(name);
    await passesLater(a, 2, WAIT_MS);
    await passesLater(b, 2, WAIT_MS);
    const stillAfterLoss = await read(name);
    expect(stillAfterLoss?.metadata.resourceVersion).toBe(afterLoss?.metadata.resourceVersion);
    expect(stillAfterLoss?.status?.activeController).toEqual(first);

    // pod-b acquires the Lease: it overwrites identity, endpoint and leaderSince.
    b.acquire();
    const second = await pollUntil(
      async () => {
        const v = await published(name);
        return v?.identity === 'pod-b' ? v : undefined;
      },
      WAIT_MS,
      'pod-b published',
    );
    expect(second).toMatchObject({
      identity: 'pod-b',
      endpoint: 'http://127.0.0.6:8081',
      leaderSince: b.since!.toISOString(),
    });
    expect(Date.parse(second.leaderSince)).toBeGreaterThan(Date.parse(first.leaderSince));
    // The write is seen before pod-b has its answer and logs it.
    await pollUntil(
      () => pb.lines.some((l) => l.includes('published pod-b') && l.includes('changed')),
      WAIT_MS,
      'pod-b logging what it published',
    );

    // From now on neither writes: pod-a does not lead, pod-b has converged.
    const settled = await read(name);
    await passesLater(a, 2, WAIT_MS);
    await passesLater(b, 2, WAIT_MS);
    expect((await read(name))?.metadata.resourceVersion).toBe(settled?.metadata.resourceVersion);
  });

  it('fences the write: a leader that lost leadership between its check and its write publishes nothing', async () => {
    // A leader paused between its check and its write (and meanwhile replaced): isLeader() answers
    // true at the start of the pass and false when asked again, after the read.
    class PausedLeader implements Leadership {
      readonly identity = 'pod-f';
      readonly since = new Date();
      calls = 0;
      isLeader(): boolean {
        return ++this.calls === 1;
      }
      leaderSince(): Date | undefined {
        return this.since;
      }
    }
    const leadership = new PausedLeader();
    const name = controllerStatusName('watcher', 'fenced');
    // A loop that does not look again for a minute: its first pass is the fenced one.
    const { publisher, lines } = start({
      leadership,
      shard: 'fenced',
      publishIntervalMs: 60_000,
      leadershipCheckMs: 60_000,
    });
    // Passes never overlap: publishOnce() runs after the loop's first pass has finished.
    expect((await publisher.publishOnce()).decision).toEqual({ write: false, reason: 'not-leader' });
    // The first pass asked twice (its check, then the fence after its read), the second once.
    expect(leadership.calls).toBe(3);
    // The first pass read (and created, spec only) the object, then wrote no status.
    const object = await read(name);
    expect(object?.spec).toEqual({ role: 'watcher', shard: 'fenced' });
    expect(object?.status?.activeController).toBeUndefined();
    expect(lines.some((l) => l.includes('published pod-f'))).toBe(false);
    expect(lines.some((l) => l.includes('pod-f does not lead'))).toBe(true);
  });

  it('publishOnce() publishes at once, for a promotion that does not wait for the loop', async () => {
    const leadership = new FakeLeadership('pod-p');
    const name = controllerStatusName('watcher', 'promote');
    // A loop that would not look again for a minute.
    const { publisher } = start({ leadership, shard: 'promote', publishIntervalMs: 60_000, leadershipCheckMs: 60_000 });
    await pollUntil(() => leadership.passes >= 1, WAIT_MS, 'the first pass');
    leadership.acquire();
    const result = await publisher.publishOnce();
    expect(result.decision).toMatchObject({ write: true, reason: 'first-publish' });
    expect((await published(name))?.identity).toBe('pod-p');
    expect((await publisher.publishOnce()).decision).toEqual({ write: false, reason: 'converged' });
  });
});
