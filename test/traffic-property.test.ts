/**
 * One Stage through a seeded random sequence of operations on the real servers: activations of new
 * and old revisions at weights 10, 50 and 100 through both executors, failing steps under Stop and
 * Revert, retries, deletions of finished activations, a person editing a route, and activations
 * interrupted mid-run (cancelled, their workflow terminated, or deleted). At every quiet
 * point: the managed routes hold what the Stage's status says, every StageVersion with a share is
 * there and marked serving, no rule sends more than 100, and nothing the registrations do not
 * manage changed; a failure, cancel, terminate or deletion under Revert left the routes exactly as
 * they were. Replay a failure
 * with KONFIDENCE_TRAFFIC_SEED (the seed is in the test's name and in every error).
 */
import { ANNOTATION_SERVING } from '../api/group.js';
import { activationWorkflowId } from '../shared/activation.js';
import { k8s } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { kubectl } from './support/cluster.js';
import { seededRandom } from './support/random.js';
import { HTTPROUTE, VIRTUALSERVICE, seedActive, seedRoutes, seedStage } from './support/scenario.js';
import { create, object, readOther, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const OPERATIONS = Number(process.env.KONFIDENCE_TRAFFIC_OPERATIONS ?? 100);
const seed = Number(process.env.KONFIDENCE_TRAFFIC_SEED ?? 11);
const STAGE = 'prop';
const WEIGHTS = [10, 50, 100] as const;
const FAILURES = ['none', 'middle', 'end'] as const;
const FINAL = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];

let s: TestSystem;
beforeAll(async () => {
  // The watcher finds a terminated workflow at its next check: every second here.
  s = await startTestSystem('traffic-prop', { watcherCheckIntervalMs: 1000 });
});
afterAll(async () => {
  await s?.stop();
});

const planName = (w: number, onFailure: string, failure: string) =>
  `${STAGE}-w${w}-${onFailure.toLowerCase()}-${failure}`;

async function seedPlans(): Promise<void> {
  for (const w of WEIGHTS) {
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, `${STAGE}-gw-${w}`, {
        type: 'gateway-api',
        timeoutSeconds: 30,
        spec: { routes: [{ name: `${STAGE}-shop`, namespace: s.ns, rules: [0] }], weight: w },
      }),
    );
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, `${STAGE}-mesh-${w}`, {
        type: 'istio',
        timeoutSeconds: 30,
        spec: {
          virtualServices: [{ name: `${STAGE}-shop`, namespace: s.ns, routes: ['primary'] }],
          host: 'shop',
          weight: w,
        },
      }),
    );
  }
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${STAGE}-check`, {
      type: 'failing',
      spec: { message: 'the check failed' },
    }),
  );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${STAGE}-wait`, {
      type: 'sleepy',
      timeoutSeconds: 60,
      spec: { seconds: 3 },
    }),
  );
  for (const w of WEIGHTS) {
    for (const onFailure of ['Stop', 'Revert']) {
      // A step between the two that takes a while: an interruption comes in it, after the gateway moved.
      const slow = [
        { name: 'gateway', tasks: [`${STAGE}-gw-${w}`] },
        { name: 'wait', tasks: [`${STAGE}-wait`] },
        { name: 'mesh', tasks: [`${STAGE}-mesh-${w}`] },
      ];
      await create(
        s,
        object('ActivationExecutionPlan', s.systemNs, planName(w, onFailure, 'slow'), { onFailure, steps: slow }),
      );
      for (const failure of FAILURES) {
        const steps = [
          { name: 'gateway', tasks: [`${STAGE}-gw-${w}`] },
          ...(failure === 'middle' ? [{ name: 'check', tasks: [`${STAGE}-check`] }] : []),
          { name: 'mesh', tasks: [`${STAGE}-mesh-${w}`] },
          ...(failure === 'end' ? [{ name: 'check', tasks: [`${STAGE}-check`] }] : []),
        ];
        await create(
          s,
          object('ActivationExecutionPlan', s.systemNs, planName(w, onFailure, failure), { onFailure, steps }),
        );
      }
    }
  }
}

const api = () => s.kc.makeApiClient(k8s.CustomObjectsApi);

/** The routes as the test reads them itself: the managed rules as StageVersion → percent, and everything else. */
async function readRoutes() {
  const route = await readOther(s.kc, ...HTTPROUTE, s.ns, `${STAGE}-shop`);
  const vs = await readOther(s.kc, ...VIRTUALSERVICE, s.ns, `${STAGE}-shop`);
  const managedRef = (b: any) => /^prop-shop-v\d+$/.test(b.name);
  const managedDest = (d: any) => d.destination.host === 'shop' && /^v\d+$/.test(d.destination.subset ?? '');
  const gw: Record<string, number> = {};
  for (const b of route.spec.rules[0].backendRefs.filter(managedRef))
    gw[`${STAGE}-${b.name.slice('prop-shop-v'.length)}`] = b.weight ?? 1;
  const mesh: Record<string, number> = {};
  for (const d of vs.spec.http[0].route.filter(managedDest))
    mesh[`${STAGE}-${d.destination.subset.slice(1)}`] = d.weight ?? 100;
  // Everything the registrations do not manage, as it must stay.
  const unmanaged = JSON.stringify({
    gw: {
      ...route.spec,
      rules: route.spec.rules.map((r: any, i: number) =>
        i === 0 ? { ...r, backendRefs: r.backendRefs.filter((b: any) => !managedRef(b)) } : r,
      ),
    },
    mesh: {
      ...vs.spec,
      http: vs.spec.http.map((h: any, i: number) =>
        i === 0 ? { ...h, route: h.route.filter((d: any) => !managedDest(d)) } : h,
      ),
    },
  });
  const sums = [
    route.spec.rules[0].backendRefs.reduce((a: number, b: any) => a + (b.weight ?? 1), 0),
    vs.spec.http[0].route.reduce((a: number, d: any) => a + (d.weight ?? 100), 0),
  ];
  return { gw, mesh, unmanaged, sums, specs: JSON.stringify([route.spec, vs.spec]) };
}

const percent = (w: Record<string, number>) => {
  const total = Object.values(w).reduce((a, b) => a + b, 0);
  return Object.fromEntries(
    Object.entries(w).flatMap(([k, v]) => (v > 0 && total > 0 ? [[k, Math.round((v * 100) / total)]] : [])),
  );
};
const sorted = (o: Record<string, number>) =>
  JSON.stringify(Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b))));

async function quiet(where: string): Promise<void> {
  await pollUntil(
    async () => (await s.objects.list('VectorActivation', s.ns)).every((va) => FINAL.includes(va.status?.phase)),
    60_000,
    `${where}: every activation to finish`,
    100,
  );
}

/** The invariants, once the Stage controller has read the routes as they are. */
async function check(where: string, unmanagedBefore: string): Promise<void> {
  const r = await readRoutes();
  const wanted = [sorted(percent(r.gw)), sorted(percent(r.mesh))];
  let last = '';
  await pollUntil(
    async () => {
      s.stageController!.enqueue(s.ns);
      const st = await s.objects.get('Stage', s.ns, STAGE);
      const traffic: { route: { kind: string }; weights: Record<string, number> }[] = st?.status?.traffic ?? [];
      const shown = ['HTTPRoute', 'VirtualService'].map((k) =>
        sorted(traffic.find((t) => t.route.kind === k)?.weights ?? {}),
      );
      last = `status says ${shown.join(' / ')}, routes hold ${wanted.join(' / ')}`;
      return shown[0] === wanted[0] && shown[1] === wanted[1];
    },
    30_000,
    `${where}: the Stage's status to say what the routes hold`,
    200,
  ).catch((err: Error) => {
    throw new Error(`${err.message} (${last})`);
  });
  const svs = await s.objects.list('StageVersion', s.ns);
  for (const name of new Set([...Object.keys(percent(r.gw)), ...Object.keys(percent(r.mesh))])) {
    const sv = svs.find((x) => x.metadata.name === name);
    if (!sv || sv.metadata.deletionTimestamp)
      throw new Error(`${where}: StageVersion ${name} receives traffic but ${sv ? 'is being deleted' : 'is gone'}`);
    if (sv.metadata.annotations?.[ANNOTATION_SERVING] !== STAGE) {
      await pollUntil(
        async () =>
          (await s.objects.get('StageVersion', s.ns, name))?.metadata.annotations?.[ANNOTATION_SERVING] === STAGE,
        10_000,
        `${where}: ${name} to be marked serving`,
        100,
      );
    }
  }
  if (r.sums.some((x) => x > 100)) throw new Error(`${where}: a rule sends ${r.sums.join(' and ')} in all`);
  if (r.unmanaged !== unmanagedBefore)
    throw new Error(`${where}: something the registrations do not manage changed: ${r.unmanaged}`);
}

it(
  `keeps the routes, the Stage's status and the protection in agreement through ${OPERATIONS} random operations (seed ${seed})`,
  async () => {
    await seedPlans();
    await seedStage(s, STAGE, [1], { stageVersionHistoryLimit: 1 });
    await seedRoutes(s, STAGE, 1);
    await seedActive(s, STAGE, 1);
    const { unmanaged } = await readRoutes();
    const rnd = seededRandom(seed);
    let latest = 1;
    const counts: Record<string, number> = {};
    for (let i = 0; i < OPERATIONS; i++) {
      const op = rnd.pick(['activate', 'activate', 'activate', 'old', 'retry', 'delete', 'edit', 'interrupt'] as const);
      const vas = await s.objects.list('VectorActivation', s.ns);
      let where = `seed ${seed}, operation ${i} (${op})`;
      const before = await readRoutes();
      let revertedFailure = false;
      if (op === 'activate' || op === 'old') {
        const w = rnd.pick(WEIGHTS);
        const onFailure = rnd.pick(['Stop', 'Revert'] as const);
        const failure = rnd.pick(FAILURES);
        let r: number;
        if (op === 'activate') {
          // A new vector: the Stage controller makes its StageVersion, which is then rolled out
          // (given its backend), as a deployment would; it is not marked Ready, so the controller
          // starts no activation of its own.
          r = ++latest;
          await s.objects.mergeSpec('Stage', s.ns, STAGE, { vector: `example/vector:0.0.${r}` });
          const made = await waitFor(s, 'StageVersion', `${STAGE}-${r}`, () => true, 30_000);
          await s.objects.mergeSpec('StageVersion', s.ns, `${STAGE}-${r}`, {
            ...made.spec,
            backend: { service: `${STAGE}-shop-v${r}`, port: 8080, subset: `v${r}` },
          });
        } else {
          const existing = (await s.objects.list('StageVersion', s.ns)).filter((x) => !x.metadata.deletionTimestamp);
          r = rnd.pick(existing).spec.revision;
        }
        where += ` of ${STAGE}-${r} by ${planName(w, onFailure, failure)}`;
        await create(
          s,
          object('VectorActivation', s.ns, `${STAGE}-op-${i}`, {
            stage: STAGE,
            stageVersion: `${STAGE}-${r}`,
            executionPlan: planName(w, onFailure, failure),
          }),
        );
        await quiet(where);
        const va = await s.objects.get('VectorActivation', s.ns, `${STAGE}-op-${i}`);
        revertedFailure = va?.status?.phase === 'Failed' && onFailure === 'Revert';
        where += ` → ${va?.status?.phase}`;
        const outcome = revertedFailure ? 'reverted' : String(va?.status?.phase);
        counts[outcome] = (counts[outcome] ?? 0) + 1;
        if (va?.status?.phase === 'Failed')
          counts[`Failed:${va.status.reason}`] = (counts[`Failed:${va.status.reason}`] ?? 0) + 1;
        if (process.env.KONFIDENCE_TRAFFIC_TRACE) console.log(`${where}: ${va?.status?.message}`);
      } else if (op === 'retry') {
        const failed = vas.filter((va) => va.status?.phase === 'Failed' && va.status?.reason === 'TaskFailed');
        if (failed.length) {
          const va = rnd.pick(failed);
          where += ` of ${va.metadata.name}`;
          await kubectl('annotate', 'va', va.metadata.name, '-n', s.ns, `konfidence.cloud/retry=${i}`, '--overwrite');
          const attempt = va.status.attempt ?? 1;
          await pollUntil(
            async () => {
              const now = await s.objects.get('VectorActivation', s.ns, va.metadata.name);
              return (now?.status?.attempt ?? 1) > attempt && FINAL.includes(now?.status?.phase);
            },
            60_000,
            `${where}: the retry to finish`,
            100,
          );
        }
      } else if (op === 'delete') {
        const done = vas.filter((va) => FINAL.includes(va.status?.phase));
        if (done.length) {
          const va = rnd.pick(done);
          where += ` of ${va.metadata.name}`;
          await s.objects.delete('VectorActivation', s.ns, va.metadata.name);
        }
      } else if (op === 'interrupt') {
        // A new version, interrupted in its slow middle step (the gateway route moved already).
        const w = rnd.pick(WEIGHTS);
        const onFailure = rnd.pick(['Stop', 'Revert'] as const);
        // Each kind in turn: every sequence with three interruptions or more has them all.
        const how = (['cancel', 'terminate', 'delete'] as const)[(counts.interrupt ?? 0) % 3]!;
        const r = ++latest;
        await s.objects.mergeSpec('Stage', s.ns, STAGE, { vector: `example/vector:0.0.${r}` });
        const made = await waitFor(s, 'StageVersion', `${STAGE}-${r}`, () => true, 30_000);
        await s.objects.mergeSpec('StageVersion', s.ns, `${STAGE}-${r}`, {
          ...made.spec,
          backend: { service: `${STAGE}-shop-v${r}`, port: 8080, subset: `v${r}` },
        });
        const name = `${STAGE}-op-${i}`;
        where += ` of ${STAGE}-${r} by ${planName(w, onFailure, 'slow')}, ${how}`;
        await create(
          s,
          object('VectorActivation', s.ns, name, {
            stage: STAGE,
            stageVersion: `${STAGE}-${r}`,
            executionPlan: planName(w, onFailure, 'slow'),
          }),
        );
        const running = await waitFor(
          s,
          'VectorActivation',
          name,
          (o) => o.status?.steps?.[1]?.phase === 'InProgress' || FINAL.includes(o.status?.phase),
          60_000,
        );
        if (how === 'cancel') await kubectl('annotate', 'va', name, '-n', s.ns, `konfidence.cloud/cancel=${i}`);
        else if (how === 'delete') await kubectl('delete', 'va', name, '-n', s.ns, '--wait=false');
        else
          await s.client.workflow
            .getHandle(activationWorkflowId({ namespace: s.ns, name, uid: running.metadata.uid! }))
            .terminate('the property test terminated it');
        if (how === 'delete')
          await pollUntil(
            async () => !(await s.objects.get('VectorActivation', s.ns, name)),
            60_000,
            `${where}: the object to go`,
            100,
          );
        await quiet(where);
        const va = await s.objects.get('VectorActivation', s.ns, name);
        where += ` → ${va?.status?.phase ?? 'gone'}`;
        revertedFailure = onFailure === 'Revert';
        counts[`interrupt:${how}`] = (counts[`interrupt:${how}`] ?? 0) + 1;
        if (process.env.KONFIDENCE_TRAFFIC_TRACE) console.log(`${where}: ${va?.status?.message}`);
      } else {
        // A person sends the gateway route's managed share to the active StageVersion alone.
        const active = (await s.objects.get('StageVersionUsage', s.ns, `${STAGE}-active`))?.spec.stageVersionRef
          ?.name as string;
        const [group, version, plural] = HTTPROUTE;
        const route: any = await api().getNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: s.ns,
          name: `${STAGE}-shop`,
        });
        const refs = route.spec.rules[0].backendRefs.filter((b: any) => !/^prop-shop-v\d+$/.test(b.name));
        route.spec.rules[0].backendRefs = [
          ...refs,
          { name: `prop-shop-v${active.slice(`${STAGE}-`.length)}`, port: 8080, weight: 100 },
        ];
        await api().replaceNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: s.ns,
          name: `${STAGE}-shop`,
          body: route,
        });
        where += ` (all to ${active})`;
      }
      counts[op] = (counts[op] ?? 0) + 1;
      if (revertedFailure && (await readRoutes()).specs !== before.specs)
        throw new Error(
          `${where}: the revert did not put the routes back exactly: ${(await readRoutes()).specs} (before: ${before.specs})`,
        );
      await check(where, unmanaged);
    }
    console.log(`seed ${seed}: ${JSON.stringify(counts)}`);
    expect(['activate', 'old', 'retry', 'delete', 'edit', 'interrupt'].reduce((a, k) => a + (counts[k] ?? 0), 0)).toBe(
      OPERATIONS,
    );
    // The sequence went through every path it is about.
    for (const path of [
      'Succeeded',
      'Failed',
      'reverted',
      'retry',
      'edit',
      'interrupt:cancel',
      'interrupt:terminate',
      'interrupt:delete',
    ])
      expect({ path, seen: (counts[path] ?? 0) > 0 }).toEqual({ path, seen: true });
  },
  30 * 60_000,
);
