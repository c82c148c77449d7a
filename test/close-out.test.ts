/**
 * Close-out and deletion keep ADR-0012's order, on the real servers, for both executors at weights
 * 10 and 50: a workflow terminated from outside is closed out by a run of its own that ends the
 * executions, puts the routes back exactly under onFailure Revert (or names what stayed under
 * Stop), and lets the Stage go; a VectorActivation deleted mid-run, with the watcher there or
 * not, waits on its close-out finalizer until its run has put the routes back.
 */
import { k8s } from '../k8s/client.js';
import { activationWorkflowId } from '../shared/activation.js';
import { stageLeaseName } from '../shared/names.js';
import { FINALIZER_CLOSE_OUT, LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { pollUntil } from '../scripts/env/process.js';
import { HTTPROUTE, VIRTUALSERVICE, activate, seedActive, seedRoutes, seedStage } from './support/scenario.js';
import { kubectl } from './support/cluster.js';
import { create, object, phaseIs, readOther, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('closeout', { watcherCheckIntervalMs: 1000 });
});
afterAll(async () => {
  await s?.stop();
});

const cases = [10, 50].flatMap((weight) => (['gateway-api', 'istio'] as const).map((type) => ({ weight, type })));
type Case = (typeof cases)[number];

/** The routes' whole specs: a put-back must be exact. */
async function specs(stage: string) {
  return Promise.all([
    (await readOther(s.kc, ...HTTPROUTE, s.ns, `${stage}-shop`)).spec,
    (await readOther(s.kc, ...VIRTUALSERVICE, s.ns, `${stage}-shop`)).spec,
  ]);
}

/**
 * A Stage whose plan changes the routes in its first step, at the weight, and then works for a while
 * (a test executor that sleeps and says it manages a rule of its own): a run caught in step 2 has
 * changed the routes. Returns the routes' specs as they were.
 */
async function seed(stage: string, { weight, type }: Case, onFailure: 'Revert' | 'Stop', steps = 2) {
  await seedStage(s, stage, [1, 2]);
  await seedRoutes(s, stage, 1);
  await seedActive(s, stage, 1);
  const spec =
    type === 'gateway-api'
      ? { routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }], weight }
      : { virtualServices: [{ name: `${stage}-shop`, namespace: s.ns, routes: ['primary'] }], host: 'shop', weight };
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-routes`, { type, timeoutSeconds: 30, spec }),
  );
  const work = Array.from({ length: steps - 1 }, (_, i) => ({
    name: `work-${i + 1}`,
    tasks: [`${stage}-work-${i + 1}`],
  }));
  for (const w of work)
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, w.tasks[0]!, {
        type: 'sleepy',
        timeoutSeconds: 60,
        spec: { seconds: 4, records: true },
      }),
    );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      onFailure,
      steps: [{ name: 'routes', tasks: [`${stage}-routes`] }, ...work],
    }),
  );
  return specs(stage);
}

const executions = async (va: string) =>
  s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=${va}`);

/** Waits until the activation's second step runs (its routes were changed) and its task recorded what it found. */
async function inSecondStep(name: string) {
  const va = await waitFor(s, 'VectorActivation', name, (o) => o.status?.steps?.[1]?.phase === 'InProgress', 60_000);
  await pollUntil(
    async () => (await executions(name)).some((e) => e.spec.step === 'work-1' && e.status?.record),
    30_000,
    `${name}'s second step to record`,
    100,
  );
  return va;
}

/** The Stage is let go: its Lease has no holder. */
async function stageFree(stage: string) {
  const lease = await s.kc
    .makeApiClient(k8s.CoordinationV1Api)
    .readNamespacedLease({ name: stageLeaseName(stage), namespace: s.ns })
    .catch(() => undefined);
  return !lease?.spec?.holderIdentity;
}

describe.each(['Revert', 'Stop'] as const)('a workflow terminated from outside, onFailure %s', (onFailure) => {
  it('is closed out by a run of its own, for both executors at weights 10 and 50', async () => {
    await Promise.all(
      cases.map(async (c) => {
        const stage = `term-${onFailure.toLowerCase()}-${c.type === 'istio' ? 'is' : 'gw'}-${c.weight}`;
        const before = await seed(stage, c, onFailure);
        await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
        const running = await inSecondStep(`${stage}-to-2`);
        expect(running.metadata.finalizers).toContain(FINALIZER_CLOSE_OUT);
        const ref = { namespace: s.ns, name: `${stage}-to-2`, uid: running.metadata.uid! };
        await s.client.workflow.getHandle(activationWorkflowId(ref)).terminate('an operator terminated it');

        const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Failed', 'Succeeded'), 60_000);
        expect(va.status.reason).toBe('WorkflowTerminated');
        const after = await specs(stage);
        if (onFailure === 'Revert') {
          expect(va.status.message).toMatch(
            /was terminated; every task that ran was reverted: its routes are back as it found them$/,
          );
          expect(after).toEqual(before);
        } else {
          expect(va.status.message).toMatch(
            /was terminated; steps left applied: routes; maybe partly applied: work-1$/,
          );
          expect(after).not.toEqual(before);
        }
        // Every execution ended before the Stage was let go; the finalizer is gone.
        for (const e of await executions(`${stage}-to-2`)) expect(['Succeeded', 'Error']).toContain(e.status?.phase);
        const work = (await executions(`${stage}-to-2`)).find(
          (e) => e.spec.action === 'Apply' && e.spec.step === 'work-1',
        );
        expect(work?.status).toMatchObject({ phase: 'Error', reason: 'Cancelled' });
        await waitFor(
          s,
          'VectorActivation',
          `${stage}-to-2`,
          (o) => !o.metadata.finalizers?.includes(FINALIZER_CLOSE_OUT),
          10_000,
        );
        expect(await stageFree(stage)).toBe(true);
      }),
    );
  });
});

describe('a VectorActivation deleted mid-run', () => {
  it('with the watcher there: it waits on its finalizer while its run puts the routes back (Revert), then goes', async () => {
    await Promise.all(
      cases.map(async (c) => {
        const stage = `del-${c.type === 'istio' ? 'is' : 'gw'}-${c.weight}`;
        const before = await seed(stage, c, 'Revert');
        await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
        await inSecondStep(`${stage}-to-2`);
        await kubectl('delete', 'va', `${stage}-to-2`, '-n', s.ns, '--wait=false');
        // Being deleted, it is still there: the watcher told its workflow, which is reverting.
        await pollUntil(
          async () => !(await s.objects.get('VectorActivation', s.ns, `${stage}-to-2`)),
          60_000,
          `${stage}-to-2 to be gone`,
          200,
        );
        expect(await specs(stage)).toEqual(before);
        expect(await stageFree(stage)).toBe(true);
      }),
    );
  });

  // Last: the watcher is stopped for it.
  it('with no watcher: its run sees the deletion at its next status write, puts the routes back (Revert), then it goes', async () => {
    const staged = await Promise.all(
      cases.map(async (c) => {
        const stage = `unw-${c.type === 'istio' ? 'is' : 'gw'}-${c.weight}`;
        const before = await seed(stage, c, 'Revert', 3);
        await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
        await inSecondStep(`${stage}-to-2`);
        return { stage, before };
      }),
    );
    await s.watcher.stop();
    for (const { stage } of staged) await kubectl('delete', 'va', `${stage}-to-2`, '-n', s.ns, '--wait=false');
    await Promise.all(
      staged.map(async ({ stage, before }) => {
        await pollUntil(
          async () => !(await s.objects.get('VectorActivation', s.ns, `${stage}-to-2`)),
          60_000,
          `${stage}-to-2 to be gone`,
          200,
        );
        expect(await specs(stage)).toEqual(before);
        expect(await stageFree(stage)).toBe(true);
      }),
    );
  });
});
