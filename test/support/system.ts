/**
 * An isolated konfidence-activation system for one test file: its own Kubernetes namespace and
 * system namespace, its own task queues, the real servers underneath.
 */
import { readFile } from 'node:fs/promises';
import { DefaultLogger, Runtime, type WorkflowBundle } from '@temporalio/worker';
import { builtInExecutors } from '../../executors/index.js';
import { failingExecutor, sleepyExecutor } from './executors.js';
import { API_VERSION } from '../../api/group.js';
import { applyCrds } from '../../k8s/crds.js';
import { routeCrds } from '../../scripts/route-crds.js';
import { CustomObjects, type CustomObject } from '../../k8s/custom-objects.js';
import { k8s } from '../../k8s/client.js';
import { startSystem, type RunningSystem, type SystemOptions } from '../../worker/system.js';
import { bundleWorkflows } from '../../worker/workflow-bundle.js';
import { freshNamespace, kubeConfig } from './cluster.js';
import { temporalAddress, temporalNamespace } from './temporal.js';
import { pollUntil } from '../../scripts/env/process.js';
import { removeNamespaces } from './namespaces.js';

try {
  // Activity failures are what many tests provoke; their status on the objects is what they check.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // installed already in this worker process
}

let bundle: Promise<WorkflowBundle> | undefined;
/**
 * The run's workflow bundle (test/global-setup.js writes it once, KONFIDENCE_WORKFLOW_BUNDLE); a
 * file run without it bundles its own, which takes seconds.
 */
export function workflowBundle(): Promise<WorkflowBundle> {
  const prebuilt = process.env.KONFIDENCE_WORKFLOW_BUNDLE;
  bundle ??= prebuilt ? readFile(prebuilt, 'utf8').then((code) => ({ code })) : bundleWorkflows();
  return bundle;
}

export interface TestSystem extends RunningSystem {
  ns: string;
  systemNs: string;
  objects: CustomObjects;
  kc: k8s.KubeConfig;
}

/** `alsoWatch`: namespaces the system serves beside its own (they are the caller's to remove). */
export async function startTestSystem(
  prefix: string,
  extra: Partial<SystemOptions> = {},
  alsoWatch: string[] = [],
): Promise<TestSystem> {
  const kc = kubeConfig();
  await applyCrds(kc, routeCrds());
  const ns = await freshNamespace(prefix);
  const systemNs = await freshNamespace(`${prefix}-sys`);
  const system = await startSystem({
    temporalAddress: temporalAddress(),
    temporalNamespace: temporalNamespace(),
    kubeConfig: kc,
    uiUrl: process.env.TEMPORAL_UI_URL,
    systemNamespace: systemNs,
    queueSuffix: `-${ns}`,
    workflowBundle: await workflowBundle(),
    log: () => undefined,
    executors: [...builtInExecutors, sleepyExecutor, failingExecutor],
    ...extra,
    namespaces: [...(extra.namespaces ?? [ns]), ...alsoWatch],
  });
  const objects = new CustomObjects(kc);
  return {
    ...system,
    async stop() {
      await system.stop();
      await removeNamespaces(kc, [ns, systemNs]);
    },
    ns,
    systemNs,
    objects,
    kc,
  };
}

export function object(
  kind: string,
  namespace: string,
  name: string,
  spec: unknown,
  extra: Partial<CustomObject['metadata']> = {},
): CustomObject {
  return { apiVersion: API_VERSION, kind, metadata: { name, namespace, ...extra }, spec };
}

export async function create(s: TestSystem, o: CustomObject): Promise<CustomObject> {
  return (await s.objects.create(o)).object;
}

/** Waits (polling, with a deadline) until the object's status satisfies `done`; returns it. */
export async function waitFor(
  s: TestSystem,
  kind: string,
  name: string,
  done: (o: CustomObject) => boolean,
  timeoutMs = 60_000,
  namespace = s.ns,
): Promise<CustomObject> {
  let last: CustomObject | undefined;
  try {
    return await pollUntil(
      async () => {
        last = await s.objects.get(kind, namespace, name);
        return last && done(last) ? last : undefined;
      },
      timeoutMs,
      `${kind} ${namespace}/${name}`,
      100,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.status)}`);
  }
}

export const phaseIs =
  (...phases: string[]) =>
  (o: CustomObject) =>
    phases.includes(o.status?.phase);

/** Plain read of a route-like object of another API group. */
export async function readOther(
  kc: k8s.KubeConfig,
  group: string,
  version: string,
  plural: string,
  namespace: string,
  name: string,
): Promise<any> {
  return kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({ group, version, plural, namespace, name });
}

export async function createOther(
  kc: k8s.KubeConfig,
  group: string,
  version: string,
  plural: string,
  namespace: string,
  body: object,
): Promise<void> {
  await kc
    .makeApiClient(k8s.CustomObjectsApi)
    .createNamespacedCustomObject({ group, version, plural, namespace, body });
}
