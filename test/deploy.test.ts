/**
 * deploy/ on the real apiserver. The base applies (server-side dry run, kubectl's own kustomize).
 * Least privilege: the base's ServiceAccounts, roles and bindings are applied into this file's
 * system namespace, and every component runs as its Deployment says (args, env) in a process whose
 * kubeconfig impersonates its ServiceAccount; together they complete an activation that the Stage
 * controller starts, with nothing refused on the way. And a component whose role lacks a rule it
 * needs fails with a message naming the verb, the resource and the namespace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { apply, k8s } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { freePort } from '../scripts/env/ports.js';
import { freshNamespace, kubectl, objectApi } from './support/cluster.js';
import { routes, seedActive, seedPlan, seedRoutes, seedStageVersion } from './support/scenario.js';
import { rollOut } from './support/stages.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';
import { buildDist, distMain, nodeFlagsOf } from '../scripts/dist.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const deployDir = join(root, 'deploy');
type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } } & Record<
  string,
  any
>;
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

interface Component {
  name: string;
  child: ChildProcess;
  lines: string[];
  port: number;
}

let s: TestSystem;
let manifests: Manifest[];
const components: Component[] = [];
/** Cluster-scoped objects this file created (renamed per run): deleted at the end. */
const clusterScoped: Manifest[] = [];
const kubeconfigDir = mkdtempSync(join(tmpdir(), 'konfidence-deploy-'));

beforeAll(async () => {
  buildDist();
  // No workers in this process: every component runs as a subprocess with its own identity.
  s = await startTestSystem('deploy', { core: false, watcher: false, stageController: false, executors: [] });
  manifests = parseAllDocuments(await kubectl('kustomize', deployDir)).map((d) => d.toJS() as Manifest);
});
afterAll(async () => {
  for (const c of components) c.child.kill('SIGKILL');
  for (const o of clusterScoped)
    await objectApi(s.kc)
      .delete(o)
      .catch(() => undefined);
  await s?.stop();
  // The components' kubeconfigs, and any overlay a test wrote: removed whether the tests passed or not.
  for (const dir of [kubeconfigDir, ...dirs]) rmSync(dir, { recursive: true, force: true });
});
const dirs: string[] = [];

const ofKind = (kind: string) => manifests.filter((m) => m.kind === kind);
const deployment = (component: string) =>
  ofKind('Deployment').find((d) => d.metadata.name === `konfidence-${component}`)!;

/**
 * The base's RBAC for `sa` (its ServiceAccount, the roles bound to it), moved into this file's system
 * namespace, cluster-scoped names made unique; `edit` may take rules away. Returns the user to impersonate.
 */
async function applyRbac(
  sa: string,
  as = sa,
  edit: (rules: Rule[], kind: string) => Rule[] = (r) => r,
  from = manifests,
): Promise<string> {
  const ofKindIn = (kind: string) => from.filter((m) => m.kind === kind);
  const objects = k8s.KubernetesObjectApi.makeApiClient(s.kc);
  const unique = (name: string) => `${name}-${as === sa ? '' : `${as}-`}${s.ns}`;
  const bindings = [...ofKindIn('ClusterRoleBinding'), ...ofKindIn('RoleBinding')].filter((b) =>
    b.subjects.some((x: any) => x.name === sa),
  );
  await apply(objects, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: as, namespace: s.systemNs } });
  for (const binding of bindings) {
    const cluster = binding.kind === 'ClusterRoleBinding';
    const role = ofKindIn(binding.roleRef.kind).find((r) => r.metadata.name === binding.roleRef.name)!;
    const metadata = (name: string) => (cluster ? { name: unique(name) } : { name: as, namespace: s.systemNs });
    const renamedRole = { ...role, metadata: metadata(role.metadata.name), rules: edit(role.rules, role.kind) };
    const renamedBinding = {
      ...binding,
      metadata: metadata(binding.metadata.name),
      roleRef: { ...binding.roleRef, name: renamedRole.metadata.name },
      subjects: [{ kind: 'ServiceAccount', name: as, namespace: s.systemNs }],
    };
    for (const o of [renamedRole, renamedBinding]) {
      await apply(objects, o);
      if (cluster) clusterScoped.push(o);
    }
  }
  return `system:serviceaccount:${s.systemNs}:${as}`;
}

/** The test's kubeconfig (the local admin) with `as`: every request is made as that user. */
function impersonating(user: string): string {
  const config = parse(readFileSync(process.env.KUBECONFIG!, 'utf8'));
  for (const u of config.users) u.user.as = user;
  const path = join(kubeconfigDir, `${user.replaceAll(':', '_')}.yaml`);
  writeFileSync(path, stringify(config));
  return path;
}

/**
 * Runs a component as its Deployment does (command's Node flags, args, literal env), the way the
 * image's ENTRYPOINT does (node dist/worker/main.js, built in beforeAll), with this file's namespaces, queues and a
 * free port.
 */
async function run(
  component: string,
  user: string,
  extraEnv: Record<string, string> = {},
  d = deployment(component),
): Promise<Component> {
  const container = d.spec.template.spec.containers[0];
  const port = await freePort();
  const literal = Object.fromEntries(
    (container.env as { name: string; value?: string }[])
      .filter((e) => e.value !== undefined)
      .map((e) => [e.name, e.value!]),
  );
  const child = spawn(process.execPath, [...nodeFlagsOf(container), distMain, ...container.args], {
    cwd: root,
    env: {
      ...process.env,
      ...literal,
      KUBECONFIG: impersonating(user),
      KONFIDENCE_SYSTEM_NAMESPACE: s.systemNs,
      KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}`,
      KONFIDENCE_WATCH_NAMESPACES: s.ns,
      KONFIDENCE_IDENTITY: `${component}-0`,
      KONFIDENCE_HEALTH_PORT: String(port),
      KONFIDENCE_ENDPOINT: `http://127.0.0.1:${port}`,
      ...extraEnv,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const c: Component = { name: d.metadata.name.replace(/^konfidence-/, ''), child, lines: [], port };
  for (const stream of [child.stdout!, child.stderr!])
    createInterface({ input: stream }).on('line', (l) => c.lines.push(l));
  components.push(c);
  return c;
}

const ready = (c: Component) =>
  pollUntil(
    async () => (await fetch(`http://127.0.0.1:${c.port}/readyz`).catch(() => undefined))?.status === 200,
    90_000,
    `${c.name} to be ready`,
    250,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; its log ends: ${c.lines.slice(-5).join(' | ')}`);
  });

async function stopAll(): Promise<void> {
  for (const c of components) c.child.kill('SIGTERM');
  await pollUntil(
    () => components.every((c) => c.child.exitCode !== null || c.child.signalCode !== null),
    40_000,
    'the components to exit',
  );
}

/** A log line's message: the `msg` of a JSON record (telemetry/log.ts), else the line. */
function message(line: string): string {
  try {
    return (JSON.parse(line) as { msg?: string }).msg ?? line;
  } catch {
    return line;
  }
}

/** Resident memory of a component's process (MiB), for the Deployments' requests (docs/deploy.md). */
const rssMiB = (c: Component) =>
  Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${c.child.pid}/status`, 'utf8'))?.[1]) / 1024);

it('applies: kubectl apply --dry-run=server -k deploy/', async () => {
  const out = await kubectl('apply', '--dry-run=server', '-k', deployDir);
  for (const c of ['core', 'watcher', 'stage-controller', 'executor-gateway-api', 'executor-istio']) {
    expect(out).toContain(`deployment.apps/konfidence-${c} `);
    expect(out).toContain(`poddisruptionbudget.policy/konfidence-${c} `);
    expect(out).toContain(`serviceaccount/konfidence-${c} `);
  }
  expect(out).toContain('customresourcedefinition.apiextensions.k8s.io/vectoractivations.landscape.konfidence.cloud');
  expect(out).toContain('validatingadmissionpolicy.admissionregistration.k8s.io/konfidence-stageversion-in-activation');
});

it('runs every component with 2 replicas, probes, limits, non-root and read-only; the elected ones elect', () => {
  const shapes = ofKind('Deployment').map((d) => {
    const pod = d.spec.template.spec;
    const c = pod.containers[0];
    const env = Object.fromEntries(c.env.map((e: any) => [e.name, e.value ?? e.valueFrom?.fieldRef?.fieldPath]));
    return {
      name: d.metadata.name,
      replicas: d.spec.replicas,
      probes: [c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path],
      limits: Object.keys(c.resources.limits).sort(),
      requests: Object.keys(c.resources.requests).sort(),
      pod: [pod.securityContext.runAsNonRoot, pod.securityContext.seccompProfile.type],
      container: [
        c.securityContext.readOnlyRootFilesystem,
        c.securityContext.allowPrivilegeEscalation,
        c.securityContext.capabilities.drop,
      ],
      identity: env.KONFIDENCE_IDENTITY,
      endpoint: env.KONFIDENCE_ENDPOINT,
      election: env.KONFIDENCE_LEADER_ELECTION ?? 'false',
      budget: ofKind('PodDisruptionBudget').find((p) => p.metadata.name === d.metadata.name)?.spec.minAvailable,
    };
  });
  const common = {
    replicas: 2,
    probes: ['/healthz', '/readyz'],
    limits: ['cpu', 'memory'],
    requests: ['cpu', 'memory'],
    pod: [true, 'RuntimeDefault'],
    container: [true, false, ['ALL']],
    identity: 'metadata.name',
    endpoint: 'http://$(POD_IP):8081',
    budget: 1,
  };
  expect(shapes.sort((a, b) => a.name.localeCompare(b.name))).toEqual(
    [
      ['konfidence-core', 'false'],
      ['konfidence-executor-gateway-api', 'false'],
      ['konfidence-executor-istio', 'false'],
      ['konfidence-stage-controller', 'true'],
      ['konfidence-watcher', 'true'],
    ].map(([name, election]) => ({ ...common, name, election })),
  );
});

it('completes an activation with every component as its own ServiceAccount, nothing refused', async () => {
  const users = new Map<string, string>();
  for (const c of ['core', 'watcher', 'stage-controller', 'executor-gateway-api', 'executor-istio'])
    users.set(c, await applyRbac(`konfidence-${c}`));
  const started = await Promise.all([...users].map(([c, user]) => run(c, user)));
  await Promise.all(started.map(ready));

  // The Stage controller creates the new StageVersion, and once it is rolled out, the VectorActivation.
  await seedStageVersion(s, 'shop', 1);
  await seedActive(s, 'shop', 1);
  await seedRoutes(s, 'shop', 1);
  await seedPlan(s, 'shop');
  await create(s, object('Stage', s.ns, 'shop', { vector: 'example/vector:0.0.2' }));
  await waitFor(s, 'StageVersion', 'shop-2', () => true, 60_000);
  await rollOut(s, 'shop-2', { service: 'shop-shop-v2', port: 8080, subset: 'v2' });
  const va = await waitFor(s, 'VectorActivation', 'activate-shop-2', phaseIs('Succeeded', 'Failed'), 120_000);
  expect({ phase: va.status.phase, message: va.status.message }).toEqual({
    phase: 'Succeeded',
    message: expect.any(String),
  });
  expect(await routes(s, 'shop')).toEqual({
    api: ['mirror-sink:0', 'shop-shop-v2:100'],
    static: ['static-files'],
    primary: ['shop/v2:100'],
    legacy: ['legacy-shop'],
  });
  await waitFor(s, 'Stage', 'shop', (st) => st.status?.activeStageVersion === 'shop-2', 30_000);
  // The leaders published themselves through their Roles in the system namespace.
  for (const role of ['watcher', 'stage-controller']) {
    const cs = await waitFor(
      s,
      'ControllerStatus',
      role,
      (o) => o.status?.activeController?.identity === `${role}-0`,
      30_000,
      s.systemNs,
    );
    expect(cs.status.activeController.endpoint).toBe(
      `http://127.0.0.1:${components.find((c) => c.name === role)!.port}`,
    );
  }
  console.log(`resident memory after the activation (MiB): ${started.map((c) => `${c.name} ${rssMiB(c)}`).join(', ')}`);
  // Best-effort writes (Events, the publisher) log a refusal instead of failing: none may appear.
  expect(
    started.flatMap((c) =>
      c.lines
        .map(message)
        .filter((l) => /forbidden|cannot (get|list|watch|create|update|patch|delete)/i.test(l))
        .map((l) => `${c.name}: ${l}`),
    ),
  ).toEqual([]);
  await stopAll();
}, 300_000);

it('a watcher without list on vectoractivations says which permission it lacks', async () => {
  const user = await applyRbac('konfidence-watcher', 'watcher-without-list', (rules) =>
    rules.map((r) =>
      r.resources.includes('vectoractivations') ? { ...r, verbs: r.verbs.filter((v) => v !== 'list') } : r,
    ),
  );
  const watcher = await run('watcher', user);
  const wanted = `User "${user}" cannot list resource "vectoractivations" in API group "landscape.konfidence.cloud" in the namespace "${s.ns}"`;
  // It keeps re-listing (a granted rule heals it without a restart) and logs the apiserver's refusal.
  const line = await pollUntil(
    () => watcher.lines.map(message).find((m) => m.includes(wanted)),
    60_000,
    `the refusal in the watcher's log`,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; its log ends: ${watcher.lines.slice(-3).join(' | ')}`);
  });
  expect(line).toMatch(/^watch of \S+ broke \(vectoractivations.landscape.konfidence.cloud is forbidden: User/);
  // Alive (it heals when the rule is granted) but not ready: a rollout of it would not proceed.
  expect((await fetch(`http://127.0.0.1:${watcher.port}/healthz`)).status).toBe(200);
  expect((await fetch(`http://127.0.0.1:${watcher.port}/readyz`)).status).toBe(503);
  await stopAll();
});

it('a core worker without get on activationexecutionplans fails the activation with a message naming the permission', async () => {
  const ns = await freshNamespace('deploy-denied');
  const user = await applyRbac('konfidence-core', 'core-without-plans', (rules, kind) =>
    kind === 'Role' ? rules.filter((r) => !r.resources.includes('activationexecutionplans')) : rules,
  );
  const env = { KONFIDENCE_QUEUE_SUFFIX: `-${ns}`, KONFIDENCE_WATCH_NAMESPACES: ns };
  const watcher = await applyRbac('konfidence-watcher');
  await Promise.all([run('core', user, env), run('watcher', watcher, env)].map(async (c) => ready(await c)));
  await create(s, object('Stage', ns, 'denied', { vector: 'example/vector:0.0.1' }));
  await create(
    s,
    object('StageVersion', ns, 'denied-1', { stage: 'denied', vector: 'example/vector:0.0.1', revision: 1 }),
  );
  await create(s, object('VectorActivation', ns, 'denied-to-1', { stage: 'denied', stageVersion: 'denied-1' }));
  const va = await waitFor(s, 'VectorActivation', 'denied-to-1', phaseIs('Succeeded', 'Failed'), 90_000, ns);
  expect(va.status.phase).toBe('Failed');
  expect(va.status.message).toContain(
    `User "${user}" cannot get resource "activationexecutionplans" in API group "landscape.konfidence.cloud" in the namespace "${s.systemNs}"`,
  );
  await stopAll();
}, 200_000);

it("the worker-versioning component makes the core worker's build the release's version label", async () => {
  // An overlay as docs/scale.md shows it: the image tag and the version label say the same.
  const overlay = mkdtempSync(join(tmpdir(), 'konfidence-overlay-'));
  dirs.push(overlay);
  const toDeploy = relative(overlay, deployDir);
  writeFileSync(
    join(overlay, 'kustomization.yaml'),
    stringify({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [toDeploy],
      components: [join(toDeploy, 'base/components/worker-versioning')],
      images: [{ name: 'konfidence-activation', newName: 'registry.example/konfidence-activation', newTag: 'v1.2.3' }],
      labels: [{ pairs: { 'app.kubernetes.io/version': 'v1.2.3' }, includeTemplates: true }],
    }),
  );
  await kubectl('apply', '--dry-run=server', '-k', overlay);
  const core = parseAllDocuments(await kubectl('kustomize', overlay))
    .map((d) => d.toJS() as Manifest)
    .find((m) => m.kind === 'Deployment' && m.metadata.name === 'konfidence-core')!;
  const container = core.spec.template.spec.containers[0];
  const buildId = container.env.find((e: any) => e.name === 'KONFIDENCE_BUILD_ID');
  expect(buildId.valueFrom.fieldRef.fieldPath).toBe("metadata.labels['app.kubernetes.io/version']");
  expect([container.image, core.spec.template.metadata.labels['app.kubernetes.io/version']]).toEqual([
    'registry.example/konfidence-activation:v1.2.3',
    'v1.2.3',
  ]);
  // The pod defaults are still there: the component adds to the env, it does not replace it.
  expect(container.env.map((e: any) => e.name)).toEqual(
    expect.arrayContaining(['KONFIDENCE_IDENTITY', 'KONFIDENCE_SYSTEM_NAMESPACE', 'KONFIDENCE_BUILD_ID']),
  );
});

describe('the sharded overlay (deploy/overlays/sharded)', () => {
  let sharded: Manifest[];
  beforeAll(async () => {
    sharded = parseAllDocuments(await kubectl('kustomize', join(deployDir, 'overlays/sharded'))).map(
      (d) => d.toJS() as Manifest,
    );
  });

  it('applies, and replaces the unsharded watcher and Stage controller with one elected pair per shard', async () => {
    const out = await kubectl('apply', '--dry-run=server', '-k', join(deployDir, 'overlays/sharded'));
    expect(out).toContain('shardingconfig.landscape.konfidence.cloud/default ');
    const deployments = sharded
      .filter((m) => m.kind === 'Deployment')
      .map((d) => {
        const env = Object.fromEntries(d.spec.template.spec.containers[0].env.map((e: any) => [e.name, e.value]));
        return [
          d.metadata.name,
          env.KONFIDENCE_SHARD ?? '-',
          d.spec.selector.matchLabels['konfidence.cloud/shard'] ?? '-',
          env.KONFIDENCE_LEADER_ELECTION ?? 'false',
        ];
      });
    expect(deployments.sort()).toEqual([
      ['konfidence-core', '-', '-', 'false'],
      ['konfidence-executor-gateway-api', '-', '-', 'false'],
      ['konfidence-executor-istio', '-', '-', 'false'],
      ['konfidence-stage-controller-hash-0', 'hash-0', 'hash-0', 'true'],
      ['konfidence-stage-controller-hash-1', 'hash-1', 'hash-1', 'true'],
      ['konfidence-watcher-hash-0', 'hash-0', 'hash-0', 'true'],
      ['konfidence-watcher-hash-1', 'hash-1', 'hash-1', 'true'],
    ]);
    expect(
      sharded
        .filter((m) => m.kind === 'PodDisruptionBudget')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(deployments.map(([name]) => name).sort());
  });

  it("a shard's watcher and Stage controller serve its namespaces as their own ServiceAccounts, nothing refused", async () => {
    // Every namespace but this file's is outside the installation; this one goes to shard hash-0.
    await objectApi(s.kc).create({
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'ShardingConfig',
      metadata: { name: 'default', namespace: s.systemNs },
      spec: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.ns } }, fallbackShard: 'hash-0' },
    } as k8s.KubernetesObject);
    const started: Component[] = [];
    for (const role of ['watcher', 'stage-controller']) {
      const user = await applyRbac(`konfidence-${role}`, `konfidence-${role}-sharded`, (r) => r, sharded);
      const d = sharded.find((m) => m.kind === 'Deployment' && m.metadata.name === `konfidence-${role}-hash-0`)!;
      started.push(await run(role, user, { KONFIDENCE_WATCH_NAMESPACES: '' }, d));
    }
    await Promise.all(started.map(ready));
    for (const role of ['watcher', 'stage-controller']) {
      // Both written through the overlay's Role: the shard's list, and its leader (the publisher).
      const cs = await waitFor(
        s,
        'ControllerStatus',
        `${role}-hash-0`,
        (o) => o.status?.serving?.namespaces?.includes(s.ns) && o.status?.activeController,
        60_000,
        s.systemNs,
      );
      expect([cs.status.serving.identity, cs.status.activeController.identity]).toEqual([`${role}-0`, `${role}-0`]);
    }
    expect(
      started.flatMap((c) =>
        c.lines
          .map(message)
          .filter((l) => /forbidden|cannot (get|list|watch|create|update|patch|delete)/i.test(l))
          .map((l) => `${c.name}: ${l}`),
      ),
    ).toEqual([]);
    await stopAll();
  }, 200_000);
});
