/** finishAndLetGo: the final status first, then the lock and the finalizer, each reported as let go or not. No servers. */
import { finishAndLetGoActivities, type FinishAndLetGoInput } from '../../activities/finish-and-let-go.js';

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

function parts(fail: { status?: boolean; lock?: boolean; finalizer?: boolean } = {}) {
  const order: string[] = [];
  const step = (name: string, fails?: boolean) => async () => {
    order.push(name);
    if (fails) throw new Error(`${name} refused (test)`);
  };
  return {
    order,
    activities: finishAndLetGoActivities({
      finishRun: async () => (await step('status', fail.status)(), true),
      releaseStageLock: step('lock', fail.lock),
      removeCloseOutFinalizer: async () => (await step('finalizer', fail.finalizer)(), true),
    }),
  };
}

test.each([
  {
    what: 'both asked, both let go',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: {},
    expected: { written: true, lockGivenBack: true, finalizerRemoved: true },
  },
  {
    what: 'a lock that does not answer is left to the workflow; the finalizer still goes',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: { lock: true },
    expected: { written: true, lockGivenBack: false, finalizerRemoved: true },
  },
  {
    what: 'a finalizer that cannot be taken away is left to the workflow; the lock still goes',
    asked: { lock: { requester: 'vectoractivation/shop/shop-to-2' }, finalizer: true },
    fail: { finalizer: true },
    expected: { written: true, lockGivenBack: true, finalizerRemoved: false },
  },
  {
    what: 'nothing asked (the lock not held, no finalizer set): only the status',
    asked: {},
    fail: {},
    expected: { written: true, lockGivenBack: false, finalizerRemoved: false },
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
