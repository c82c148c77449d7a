/**
 * zod and the apiserver judge the same objects the same way. Valid samples are mutated at random
 * (one change at a random place of the spec) and each mutant is sent as a dry run; the apiserver's
 * verdict must equal zod's, in both directions. Replay a failure with KONFIDENCE_FUZZ_SEED=<seed>.
 */
import { apiMessage, apiStatus } from '../k8s/client.js';
import { freshNamespace, kubeConfig, objectApi } from './support/cluster.js';
import { schemaOf } from './support/kinds.js';
import { seededRandom } from './support/random.js';
import { validSamples, type Sample } from './support/samples.js';

const CASES = 400;
// A fixed default keeps CI deterministic; set another seed to explore further.
const seed = Number(process.env.KONFIDENCE_FUZZ_SEED ?? 20261129);

// Values that sit on either side of the schemas' bounds. No null: the apiserver prunes nulls of
// non-nullable fields (and then applies defaults), which is a transport detail, not a rule.
const values: unknown[] = [
  '',
  'x',
  'dev-2',
  'Dev_2',
  'UPPER',
  'a'.repeat(63),
  'a'.repeat(64),
  'a'.repeat(254),
  'a.b',
  '-a',
  'Revert',
  'Stop',
  'External',
  'Worker',
  'Apply',
  'gateway-api',
  'konfidence.cloud/stage-name',
  0,
  1,
  -1,
  2,
  10,
  300,
  3600,
  3601,
  86400,
  86401,
  65535,
  70000,
  1.5,
  true,
  false,
  [],
  ['a'],
  ['a', 'a'],
  ['a', 'b'],
  [{ name: 's', tasks: ['t'] }],
  {},
  { a: 'b' },
  { name: 'dev-2' },
  { matchLabels: { 'konfidence.cloud/stage-name': 'dev' } },
  { matchLabels: {} },
  'result < 0.05',
  'result >= 0.9 && result <= 1',
  'len(result) > 0',
  { durationSeconds: 60 },
  { timeoutSeconds: 60, onTimeout: 'Continue' },
  { name: 'error-ratio' },
  { name: 'unknown' },
  'http://x.test/',
  'Abort',
  'Inconclusive',
];

type Json = Record<string, unknown> | unknown[];

/** Every container (object or array) in the spec, with the path to it. */
function containers(node: unknown, path: (string | number)[] = []): { node: Json; path: (string | number)[] }[] {
  if (node === null || typeof node !== 'object') return [];
  const here = { node: node as Json, path };
  const children = Array.isArray(node)
    ? node.flatMap((v, i) => containers(v, [...path, i]))
    : Object.entries(node).flatMap(([k, v]) => containers(v, [...path, k]));
  return [here, ...children];
}

const extraKeys = [
  'stageVersionRef',
  'stageVersionSelector',
  'heartbeatTimeoutSeconds',
  'onFailure',
  'backend',
  'tasks',
  'name',
  'setWeight',
  'pause',
  'analysis',
  'durationSeconds',
  'successCondition',
  'from',
];

function mutate(s: Sample, rnd: ReturnType<typeof seededRandom>): string {
  const { node, path } = rnd.pick(containers(s.spec));
  const where = ['spec', ...path].join('.');
  if (Array.isArray(node)) {
    const first = node[0];
    if (node.length > 1 && first && typeof first === 'object' && !Array.isArray(first) && rnd.next() < 0.3) {
      // Make one field equal across two items: uniqueness rules are about exactly that.
      const key = rnd.pick(Object.keys(first));
      const j = 1 + rnd.int(node.length - 1);
      (node[j] as Record<string, unknown>)[key] = structuredClone((first as Record<string, unknown>)[key]);
      return `${where}[${j}].${key} = ${where}[0].${key}`;
    }
    if (node.length > 0 && rnd.next() < 0.3) {
      node.push(structuredClone(node[0]));
      return `${where}: duplicate the first item`;
    }
    if (node.length > 0 && rnd.next() < 0.5) {
      const i = rnd.int(node.length);
      node.splice(i, 1);
      return `${where}: remove item ${i}`;
    }
    const value = structuredClone(rnd.pick(values));
    node[node.length > 0 ? rnd.int(node.length) : 0] = value;
    return `${where}: set an item to ${JSON.stringify(value)}`;
  }
  const keys = Object.keys(node);
  if (keys.length > 0 && rnd.next() < 0.25) {
    const key = rnd.pick(keys);
    delete node[key];
    return `${where}: delete ${key}`;
  }
  const key = keys.length === 0 || rnd.next() < 0.2 ? rnd.pick(extraKeys) : rnd.pick(keys);
  const value = structuredClone(rnd.pick(values));
  node[key] = value;
  return `${where}.${key} = ${JSON.stringify(value)}`;
}

describe('zod and the apiserver agree', () => {
  it(`on ${CASES} random mutations of the valid samples (seed ${seed})`, async () => {
    const api = objectApi(kubeConfig());
    const ns = await freshNamespace('api-agreement');
    const rnd = seededRandom(seed);
    const samples = validSamples();
    const disagreements: unknown[] = [];
    let accepted = 0;
    for (let i = 0; i < CASES; i++) {
      const s = structuredClone(rnd.pick(samples));
      s.metadata = { name: `fuzz-${i}`, namespace: ns };
      const change = mutate(s, rnd);
      const zod = schemaOf(s.kind).safeParse(s);
      let server: { accepted: boolean; message?: string };
      try {
        await api.create(s, undefined, 'All');
        server = { accepted: true };
      } catch (err) {
        if (apiStatus(err) !== 422 && apiStatus(err) !== 400) throw err;
        server = { accepted: false, message: apiMessage(err) };
      }
      if (server.accepted) accepted++;
      if (server.accepted !== zod.success) {
        disagreements.push({ kind: s.kind, change, server, zod: zod.success ? 'accepted' : zod.error.issues });
      }
    }
    expect(disagreements).toEqual([]);
    // Both verdicts must occur often, or the test proves little.
    expect(accepted).toBeGreaterThan(CASES / 10);
    expect(accepted).toBeLessThan(CASES * 0.9);
  });
});
