/** When a transition's Events are said, and whether they look for a repeat (activities/transition-events.ts). */
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { writeThenSay } from '../../activities/transition-events.js';
import { k8s } from '../../k8s/client.js';
import { NotLeaderError } from '../../k8s/leader-election.js';
import type { RecordOptions } from '../../k8s/events.js';

const quiet = { logger: new DefaultLogger('ERROR', () => undefined) };
const refused = (code: number) => new k8s.ApiException(code, `HTTP ${code}`, {}, {});
type Outcome = { made: boolean } | { fails: unknown };

describe('writeThenSay', () => {
  it.each<[string, Outcome, number, RecordOptions[], boolean]>([
    [
      'a first attempt that made the transition says it once, without a look-up',
      { made: true },
      1,
      [{ once: true }],
      false,
    ],
    ['a write that made nothing (gone, or made already) says nothing', { made: false }, 1, [], false],
    [
      'a retried attempt (an earlier one may still run) looks for a repeat',
      { made: true },
      2,
      [{ once: false }],
      false,
    ],
    [
      'no answer: it may have landed, so it says it (looking for a repeat) and throws',
      { fails: new Error('socket hang up') },
      1,
      [{ once: false }],
      true,
    ],
    ['a 5xx may have landed too', { fails: refused(503) }, 1, [{ once: false }], true],
    ['a refusal (4xx) did not land: nothing is said', { fails: refused(422) }, 1, [], true],
    [
      "a deposed leader's fenced write was never sent: nothing is said",
      { fails: new NotLeaderError('watcher-a', 'a skip') },
      1,
      [],
      true,
    ],
  ])('%s', async (_name, outcome, attempt, said, throws) => {
    const says: RecordOptions[] = [];
    const write = async () => {
      if ('fails' in outcome) throw outcome.fails;
      return outcome.made;
    };
    const run = new MockActivityEnvironment({ attempt }, quiet).run(() =>
      writeThenSay(
        write,
        (o) => says.push(o),
        (made) => made,
      ),
    );
    if (throws) await expect(run).rejects.toBeDefined();
    else await run;
    expect(says).toEqual(said);
  });

  it('outside an activity it counts as a first attempt', async () => {
    const says: RecordOptions[] = [];
    await writeThenSay(
      async () => undefined,
      (o) => says.push(o),
    );
    expect(says).toEqual([{ once: true }]);
  });
});
