/** finishAndLetGo: the final status first, then the lock and the finalizer, each reported as let go or not. No servers. */
import { ApplicationFailure } from '@temporalio/common';
import { finishAndLetGoActivities, type FinishAndLetGoInput } from '../../activities/finish-and-let-go.js';
import { RELEASE_UNANSWERED } from '../../stage-lock/contract.js';

const ref = { namespace: 'shop', name: 'shop-to-2', uid: 'uid-1' };
const finish: FinishAndLetGoInput = {
  ref,
  stage: 'shop',
  holder: 'shop/shop-to-2',
  lease: true,
  status: {
    phase: 'Succeeded',
    reason: 'Activated',
    message: 'Stage shop now serves shop-2',
    workflowId: 'vectoractivation/shop/shop-to-2',
    attempt: 1,
    steps: [],
  },
};

type Failing = { status?: boolean; lock?: boolean | 'unanswered' | 'never'; finalizer?: boolean };

function parts(fail: Failing = {}, letGoWithinMs?: number) {
  const order: string[] = [];
  const step = (name: string, fails?: boolean | 'unanswered' | 'never') => async () => {
    order.push(name);
    // As releaseStageLock says the lock did not answer in time.
    if (fails === 'unanswered') throw ApplicationFailure.nonRetryable('no answer in time (test)', RELEASE_UNANSWERED);
    if (fails) throw new Error(`${name} refused (test)`);
  };
  return {
    order,
    activities: finishAndLetGoActivities(
      {
        finishRun: async () => (await step('status', fail.status)(), true),
        releaseStageLock: fail.lock === 'never' ? () => new Promise<void>(() => undefined) : step('lock', fail.lock),
        removeCloseOutFinalizer: async () => (await step('finalizer', fail.finalizer)(), true),
      },
      letGoWithinMs,
    ),
  };
}

test.each([
  {
    what: 'both asked, both let go',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: {},
    expected: { written: true, lock: 'givenBack', finalizerRemoved: true },
  },
  {
    what: 'a lock that does not answer in time is told so: the workflow releases by signal; the finalizer still goes',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: { lock: 'unanswered' as const },
    expected: { written: true, lock: 'unanswered', finalizerRemoved: true },
  },
  {
    what: 'a release that fails otherwise is left to the workflow; the finalizer still goes',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: { lock: true },
    expected: { written: true, lock: 'toWorkflow', finalizerRemoved: true },
  },
  {
    what: 'a finalizer that cannot be taken away is left to the workflow; the lock still goes',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: { finalizer: true },
    expected: { written: true, lock: 'givenBack', finalizerRemoved: false },
  },
  {
    what: 'nothing asked (the lock not held, no finalizer set): only the status',
    asked: {},
    fail: {},
    expected: { written: true, lock: 'toWorkflow', finalizerRemoved: false },
  },
])('$what', async ({ asked, fail, expected }) => {
  const { order, activities } = parts(fail);
  await expect(activities.finishAndLetGo({ ...finish, ...asked })).resolves.toEqual(expected);
  // Whoever finds the lock free or the finalizer gone reads the final phase already.
  expect(order[0]).toBe('status');
  expect(order.length).toBe(1 + Object.keys(asked).length);
});

test('a final status that cannot be written fails the activity before anything is let go', async () => {
  const { order, activities } = parts({ status: true });
  await expect(
    activities.finishAndLetGo({ ...finish, lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true }),
  ).rejects.toThrow('status refused');
  expect(order).toEqual(['status']);
});

test('a release that does not end within its bound is left to the workflow: the final status does not wait for it', async () => {
  const { order, activities } = parts({ lock: 'never' }, 50);
  await expect(
    activities.finishAndLetGo({ ...finish, lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true }),
  ).resolves.toEqual({ written: true, lock: 'toWorkflow', finalizerRemoved: true });
  expect(order).toEqual(['status', 'finalizer']);
});
