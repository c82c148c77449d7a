/**
 * The core reads the system namespace's plans, registrations and CircuitBreakers from its watches
 * (k8s/system-config.ts): an activation's plan costs the apiserver no request, a change reaches the
 * next activation as soon as its watch event does, and a core whose watch cannot answer reads as
 * before.
 */
import { coreDeps } from '../activities/deps.js';
import { planActivities } from '../activities/plan.js';
import { breakerActivities } from '../activities/breaker.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { SystemConfig } from '../k8s/system-config.js';
import { pollUntil } from '../scripts/env/process.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';
import { removeNamespaces } from './support/namespaces.js';
import { object } from './support/system.js';

const kc = kubeConfig();
const objects = new CustomObjects(kc);
let ns: string;
let config: SystemConfig | undefined;

/** A KubeConfig whose requests are counted. */
function counting() {
  let requests = 0;
  const counted = Object.create(kc) as typeof kc;
  counted.applySecurityAuthentication = async (context) => {
    requests++;
    return kc.applySecurityAuthentication(context);
  };
  return { counted, requests: () => requests };
}

const registration = (name: string) =>
  object('ActivationTaskRegistration', ns, name, { type: 'sleepy', timeoutSeconds: 60, spec: { seconds: 0 } });

beforeAll(async () => {
  ns = await freshNamespace('system-config');
  await objects.create(registration('first'));
  await objects.create(registration('second'));
  await objects.create(
    object('ActivationExecutionPlan', ns, 'default', { steps: [{ name: 'one', tasks: ['first'] }] }),
  );
});

afterAll(async () => {
  await config?.stop();
  await removeNamespaces(kc, [ns]);
});

it('an activation reads its plan, registrations and breakers from the watches, with no request; a changed plan is the next one read', async () => {
  const { counted, requests } = counting();
  config = new SystemConfig(counted, ns, () => undefined);
  await config.start();
  const deps = coreDeps(counted, ns, () => undefined, config);
  const { resolvePlan } = planActivities(deps);
  const { breakersApply } = breakerActivities(deps);
  const before = requests();

  const plan = await resolvePlan(undefined, 'tenant');
  expect(plan.steps.map((s) => [s.name, s.tasks.map((t) => t.registration)])).toEqual([['one', ['first']]]);
  expect(await breakersApply('tenant')).toBe(false);
  expect(requests()).toBe(before);

  // A plan changed, and a breaker made: the next reads find them once their watch events came.
  await objects.mergeSpec('ActivationExecutionPlan', ns, 'default', {
    steps: [
      { name: 'one', tasks: ['first'] },
      { name: 'two', tasks: ['second'] },
    ],
  });
  await objects.create(object('CircuitBreaker', ns, 'guard', { failureThreshold: 3 }));
  await pollUntil(
    async () =>
      ((await resolvePlan(undefined, 'tenant')).steps.length === 2 && (await breakersApply('tenant'))) || undefined,
    10_000,
    'the changed plan and the new breaker in the watches',
  );
  // A plan that does not exist is refused as when it was read.
  await expect(resolvePlan('missing', 'tenant')).rejects.toThrow(
    `ActivationExecutionPlan ${ns}/missing does not exist`,
  );
});

it('a core whose watches cannot answer reads the plan from the apiserver', async () => {
  const { counted, requests } = counting();
  // Never started: nothing listed yet.
  const unstarted = new SystemConfig(counted, ns, () => undefined);
  const { resolvePlan } = planActivities(coreDeps(counted, ns, () => undefined, unstarted));
  const plan = await resolvePlan(undefined, 'tenant');
  expect(plan.steps.length).toBeGreaterThanOrEqual(1);
  expect(requests()).toBe(2); // the plan and the registrations
});
