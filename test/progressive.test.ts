/**
 * Progressive activation on the real servers: kube-apiserver, the Temporal dev server and a real
 * Prometheus scraping the test app's /metrics (test/support/metrics-app.ts), which each test drives
 * (healthy, failing, silent). Both executors: each weight sets the HTTPRoute (Gateway API) then the
 * VirtualService (Istio). Approve, promote and abort by annotation (signed with the writer's user
 * name, as the admission policy requires), by Update and by the CLI; HTTP checks against a local
 * server; a newer activation superseding a canary at its gate.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { abortUpdate, activationWorkflowId, promoteUpdate } from '../shared/activation.js';
import { HTTPROUTE, VIRTUALSERVICE, activate, routes, seedActive, seedRoutes, seedStage } from './support/scenario.js';
import { konfidence } from './support/cli.js';
import { kubectl } from './support/cluster.js';
import { ERROR_RATIO_QUERY, startMetricsApp, type Health, type MetricsApp } from './support/metrics-app.js';
import { create, object, phaseIs, readOther, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const prometheusUrl = process.env.KONFIDENCE_PROMETHEUS_URL!;
let s: TestSystem;
let app: MetricsApp;
let checks: Server;
let checksUrl: string;

beforeAll(async () => {
  // The watcher checks unfinished activations' workflows every 2 s: a terminated canary is found soon.
  s = await startTestSystem('progressive', { prometheusUrl, watcherCheckIntervalMs: 2_000 });
  app = await startMetricsApp(`progressive-${s.ns}`);
  // The HTTP checks' far end: /ok passes, /no refuses.
  checks = createServer((req, res) =>
    res.writeHead(req.url === '/ok' ? 200 : 403).end(req.url === '/ok' ? 'go on' : 'not now'),
  );
  await new Promise<void>((resolve) => checks.listen(0, '127.0.0.1', resolve));
  checksUrl = `http://127.0.0.1:${(checks.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.stop();
  await new Promise((resolve) => checks?.close(resolve));
  await s?.stop();
});

const analysis = (over: Record<string, unknown> = {}) => ({
  name: 'errors',
  prometheus: { address: prometheusUrl, query: ERROR_RATIO_QUERY },
  intervalSeconds: 1,
  count: 3,
  successCondition: 'result < 0.05',
  ...over,
});

/** Stage `stage` serving revision 1 through both routes, revision 2 healthy/failing/silent, and plan `<stage>-plan` with the progression. */
async function seedCanary(
  stage: string,
  progression: Record<string, unknown>,
  health: Health,
  analyses: unknown[] = [analysis()],
  revisions = [1, 2],
): Promise<void> {
  await seedStage(s, stage, revisions);
  await seedRoutes(s, stage, 1);
  await seedActive(s, stage, 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-gateway`, {
      type: 'gateway-api',
      timeoutSeconds: 30,
      spec: { routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }] },
    }),
  );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-mesh`, {
      type: 'istio',
      timeoutSeconds: 30,
      spec: { virtualServices: [{ name: `${stage}-shop`, namespace: s.ns, routes: ['primary'] }], host: 'shop' },
    }),
  );
  const steps = [
    { name: 'gateway', tasks: [`${stage}-gateway`] },
    { name: 'mesh', tasks: [`${stage}-mesh`] },
  ];
  await create(s, object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, { steps, progression, analyses }));
  await create(s, object('ActivationExecutionPlan', s.systemNs, `${stage}-plain`, { steps }));
  app.set(s.ns, stage, `${stage}-2`, health);
  await app.seen(prometheusUrl, s.ns, stage, `${stage}-2`);
}

const gateIs = (type: string) => (o: { status?: any }) => o.status?.progression?.gate?.type === type;

/** Both routes, whole: a restore must be exact. */
async function specs(stage: string) {
  return Promise.all(
    [
      readOther(s.kc, ...HTTPROUTE, s.ns, `${stage}-shop`),
      readOther(s.kc, ...VIRTUALSERVICE, s.ns, `${stage}-shop`),
    ].map(async (r) => (await r).spec),
  );
}

it('a healthy canary: 10 %, its analysis passes, 50 %, an approval signed by annotation, then 100 % on both executors', async () => {
  const stage = 'good';
  await seedCanary(
    stage,
    { steps: [{ setWeight: 10 }, { analysis: { name: 'errors' } }, { setWeight: 50, name: 'half' }, { pause: {} }] },
    'healthy',
  );
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });

  const waiting = await waitFor(s, 'VectorActivation', `${stage}-to-2`, gateIs('Approval'), 60_000);
  expect(waiting.status.phase).toBe('InProgress');
  expect(waiting.status.progression).toMatchObject({ step: 3, steps: 4, weight: 50 });
  const [run] = waiting.status.progression.analysisRuns;
  expect(run).toMatchObject({
    name: 'errors',
    phase: 'Successful',
    successful: 3,
    query: `max(konfidence_test_error_ratio{namespace="${s.ns}",stage="${stage}",stage_version="${stage}-2"})`,
  });
  expect(run.measurements.map((m: { value: number }) => m.value)).toEqual([0.01, 0.01, 0.01]);
  // Both routes hold the weight the gate waits at; what nobody manages stays.
  expect(await routes(s, stage)).toEqual({
    api: ['mirror-sink:0', `${stage}-shop-v2:50`, `${stage}-shop-v1:50`],
    static: ['static-files'],
    primary: ['shop/v2:50', 'shop/v1:50'],
    legacy: ['legacy-shop'],
  });
  // The Stage shows the weights, and both versions are protected.
  await waitFor(
    s,
    'Stage',
    stage,
    (o) => JSON.stringify(o.status?.servingStageVersions) === JSON.stringify([`${stage}-2`, `${stage}-1`]),
    30_000,
  );

  // An approval that does not say who truly asks is refused by the apiserver, saying how.
  await expect(
    kubectl('annotate', 'va', `${stage}-to-2`, '-n', s.ns, '--overwrite', 'konfidence.cloud/approve=someone-else'),
  ).rejects.toThrow(/must start with your user name, admin/);
  await kubectl(
    'annotate',
    'va',
    `${stage}-to-2`,
    '-n',
    s.ns,
    '--overwrite',
    'konfidence.cloud/approve=admin looks good',
  );

  const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 60_000);
  expect(done.status.phase).toBe('Succeeded');
  expect(done.status.requests).toEqual([
    expect.objectContaining({
      action: 'approve',
      outcome: 'Accepted',
      by: 'admin',
      token: 'konfidence.cloud/approve=admin looks good',
    }),
  ]);
  expect(done.status.progression.log).toEqual([expect.objectContaining({ action: 'Approved', by: 'admin', step: 3 })]);
  expect(await routes(s, stage)).toEqual({
    api: ['mirror-sink:0', `${stage}-shop-v2:100`],
    static: ['static-files'],
    primary: ['shop/v2:100'],
    legacy: ['legacy-shop'],
  });
  const events = await kubectl(
    'get',
    'events',
    '-n',
    s.ns,
    '--field-selector',
    `involvedObject.name=${stage}-to-2`,
    '-o',
    'jsonpath={.items[*].reason}',
  );
  expect(events.split(' ')).toEqual(expect.arrayContaining(['ApproveAccepted', 'Succeeded']));
});

it('a failing analysis goes back down the abort weights, then the routes are exactly as before, and the message says the query, the values and the condition', async () => {
  const stage = 'bad';
  await seedCanary(
    stage,
    { steps: [{ setWeight: 50 }, { analysis: { name: 'errors' } }], abort: { weights: [20], intervalSeconds: 1 } },
    'failing',
  );
  const before = await specs(stage);
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 60_000);
  expect(va.status).toMatchObject({ phase: 'Failed', reason: 'AnalysisFailed' });
  expect(va.status.message).toContain('analysis errors (success: result < 0.05) measured 0.5;');
  expect(va.status.message).toContain(
    `query: max(konfidence_test_error_ratio{namespace="${s.ns}",stage="${stage}",stage_version="${stage}-2"})`,
  );
  expect(va.status.message).toMatch(/the traffic is back as recorded before the activation$/);
  expect(await specs(stage)).toEqual(before);
  // It went down through 20 % first: the ramp's executions set it, the mesh before the gateway.
  const executions = await s.objects.list('ActivationExecution', s.ns);
  const ramp = executions.filter(
    (e) => e.spec.vectorActivation === `${stage}-to-2` && e.spec.assignment?.[`${stage}-2`] === 20,
  );
  expect(ramp.map((e) => e.spec.registration).sort()).toEqual([`${stage}-gateway`, `${stage}-mesh`]);
});

it('no data follows the analysis rule: Failed fails at once; Inconclusive waits for a person, and an abort by the CLI puts the routes back', async () => {
  await seedCanary('nodata', { steps: [{ setWeight: 10 }, { analysis: { name: 'errors' } }] }, 'silent', [
    analysis({ noData: 'Failed' }),
  ]);
  const nodataBefore = await specs('nodata');
  await activate(s, 'nodata-to-2', 'nodata', 2, { executionPlan: 'nodata-plan' });
  const failed = await waitFor(s, 'VectorActivation', 'nodata-to-2', phaseIs('Succeeded', 'Failed'), 60_000);
  expect(failed.status).toMatchObject({
    phase: 'Failed',
    reason: 'AnalysisFailed',
    message: expect.stringContaining('the query returned no series'),
  });
  expect(await specs('nodata')).toEqual(nodataBefore);

  await seedCanary('unsure', { steps: [{ setWeight: 10 }, { analysis: { name: 'errors' } }] }, 'silent');
  const before = await specs('unsure');
  await activate(s, 'unsure-to-2', 'unsure', 2, { executionPlan: 'unsure-plan' });
  const waiting = await waitFor(s, 'VectorActivation', 'unsure-to-2', gateIs('Inconclusive'), 60_000);
  expect(waiting.status.progression.analysisRuns[0]).toMatchObject({ phase: 'Inconclusive', inconclusive: 1 });
  const cli = await konfidence('abort', 'unsure-to-2', '-n', s.ns);
  expect(cli).toMatchObject({
    code: 0,
    stdout: expect.stringMatching(/^Accepted: abort accepted while InProgress \(asked by admin\)/),
  });
  const va = await waitFor(s, 'VectorActivation', 'unsure-to-2', phaseIs('Succeeded', 'Failed'), 60_000);
  expect(va.status).toMatchObject({
    phase: 'Failed',
    reason: 'Aborted',
    message: 'aborted at step 2/2 by admin; the traffic is back as recorded before the activation',
  });
  expect(await specs('unsure')).toEqual(before);
  // An abort after the end is refused, saying why.
  expect(await konfidence('abort', 'unsure-to-2', '-n', s.ns)).toMatchObject({
    code: 1,
    stdout: expect.stringContaining('Refused: the activation is Failed; nothing waits'),
  });
});

it('HTTP checks: a 2xx goes on to 100 %; a 4xx fails the activation and the traffic goes back', async () => {
  await seedCanary('hook', { steps: [{ setWeight: 10 }, { webhook: { url: `${checksUrl}/ok` } }] }, 'healthy');
  await activate(s, 'hook-to-2', 'hook', 2, { executionPlan: 'hook-plan' });
  expect((await waitFor(s, 'VectorActivation', 'hook-to-2', phaseIs('Succeeded', 'Failed'), 60_000)).status.phase).toBe(
    'Succeeded',
  );

  await seedCanary('nohook', { steps: [{ setWeight: 10 }, { webhook: { url: `${checksUrl}/no` } }] }, 'healthy');
  const before = await specs('nohook');
  await activate(s, 'nohook-to-2', 'nohook', 2, { executionPlan: 'nohook-plan' });
  const va = await waitFor(s, 'VectorActivation', 'nohook-to-2', phaseIs('Succeeded', 'Failed'), 60_000);
  expect(va.status).toMatchObject({
    phase: 'Failed',
    reason: 'CheckFailed',
    message: expect.stringContaining(`the HTTP check failed: ${checksUrl}/no answered 403: not now`),
  });
  expect(await specs('nohook')).toEqual(before);
});

it('promote by Update at a timed pause skips what remains; an abort after the switch is refused with the way back', async () => {
  const stage = 'promo';
  await seedCanary(
    stage,
    { steps: [{ setWeight: 10 }, { pause: { durationSeconds: 3600 } }, { setWeight: 50 }, { pause: {} }] },
    'healthy',
  );
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  const waiting = await waitFor(s, 'VectorActivation', `${stage}-to-2`, gateIs('Pause'), 60_000);
  expect(Date.parse(waiting.status.progression.gate.until) - Date.parse(waiting.status.progression.gate.since)).toBe(
    3_600_000,
  );
  const handle = s.client.workflow.getHandle(
    activationWorkflowId({ namespace: s.ns, name: `${stage}-to-2`, uid: waiting.metadata.uid! }),
  );
  const answer = await handle.executeUpdate(promoteUpdate, { args: [{ by: 'release-bot' }] });
  expect(answer.message).toBe('promote accepted while InProgress (asked by release-bot)');
  const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 60_000);
  expect(done.status.phase).toBe('Succeeded');
  expect(done.status.progression.log).toEqual([
    expect.objectContaining({ action: 'Promoted', by: 'release-bot', step: 1 }),
  ]);
  expect((await routes(s, stage)).primary).toEqual(['shop/v2:100']);
  await expect(handle.executeUpdate(abortUpdate, { args: [{}] })).rejects.toThrow();
  await kubectl('annotate', 'va', `${stage}-to-2`, '-n', s.ns, 'konfidence.cloud/abort=admin too late');
  const refused = await waitFor(
    s,
    'VectorActivation',
    `${stage}-to-2`,
    (o) => o.status?.requests?.some((r: { action: string }) => r.action === 'abort'),
    30_000,
  );
  expect(refused.status.requests.find((r: { action: string }) => r.action === 'abort')).toMatchObject({
    outcome: 'Refused',
    by: 'admin',
    message:
      'refused: the activation Succeeded: the new StageVersion serves all traffic; to go back, activate the previous StageVersion',
  });
});

it('a canary waiting at its gate gives the Stage to a newer activation: its traffic back at once, Cancelled (Superseded), then the newer one switches', async () => {
  const stage = 'newer';
  await seedCanary(
    stage,
    { steps: [{ setWeight: 10 }, { pause: {} }], abort: { weights: [5], intervalSeconds: 600 } },
    'healthy',
    [analysis()],
    [1, 2, 3],
  );
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  await waitFor(s, 'VectorActivation', `${stage}-to-2`, gateIs('Approval'), 60_000);
  await activate(s, `${stage}-to-3`, stage, 3, { executionPlan: `${stage}-plain` });
  const canary = await waitFor(
    s,
    'VectorActivation',
    `${stage}-to-2`,
    phaseIs('Cancelled', 'Failed', 'Succeeded'),
    60_000,
  );
  expect(canary.status).toMatchObject({
    phase: 'Cancelled',
    reason: 'Superseded',
    message: expect.stringContaining(`by the newer activation ${s.ns}/${stage}-to-3 (revision 3)`),
  });
  const fix = await waitFor(s, 'VectorActivation', `${stage}-to-3`, phaseIs('Succeeded', 'Failed'), 60_000);
  expect(fix.status.phase).toBe('Succeeded');
  expect(await routes(s, stage)).toMatchObject({
    api: ['mirror-sink:0', `${stage}-shop-v3:100`],
    primary: ['shop/v3:100'],
  });
});

it('a canary whose workflow is terminated at its gate is closed out by the watcher within seconds: Failed, saying what stayed applied, the Stage free', async () => {
  const stage = 'gone';
  await seedCanary(stage, { steps: [{ setWeight: 10 }, { pause: {} }] }, 'healthy');
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  const waiting = await waitFor(s, 'VectorActivation', `${stage}-to-2`, gateIs('Approval'), 60_000);
  await s.client.workflow
    .getHandle(activationWorkflowId({ namespace: s.ns, name: `${stage}-to-2`, uid: waiting.metadata.uid! }))
    .terminate('an operator terminated it');
  const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Failed', 'Succeeded', 'Cancelled'), 30_000);
  expect(va.status).toMatchObject({ phase: 'Failed', reason: 'WorkflowTerminated' });
  // Under onFailure Stop the weight stays applied and says so; the Stage is free for the next one.
  expect(va.status.message).toContain('steps left applied: gateway, mesh');
  await activate(s, `${stage}-to-1`, stage, 1);
  expect(
    (await waitFor(s, 'VectorActivation', `${stage}-to-1`, phaseIs('Succeeded', 'Failed', 'Skipped'), 60_000)).status
      .phase,
  ).toBe('Skipped');
});
