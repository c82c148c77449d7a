/**
 * What the real apiserver accepts and refuses, and that zod — the source of the CRDs and the types
 * the code uses — agrees on each object.
 */
import { allKinds, GROUP, VERSION } from '../api/index.js';
import { apiMessage, apiStatus, k8s } from '../k8s/client.js';
import { invalidCases, invalidUpdates } from './samples/invalid.js';
import { freshNamespace, kubeConfig, objectApi } from './support/cluster.js';
import { schemaOf } from './support/kinds.js';
import { sample, validSamples, type Sample } from './support/samples.js';

const api = objectApi(kubeConfig());
let ns: string;

beforeAll(async () => {
  ns = await freshNamespace('api-validation');
});

const inNs = (o: Sample): Sample => ({ ...o, metadata: { ...o.metadata, namespace: ns } });

async function refusal(create: Promise<unknown>): Promise<{ status?: number; message: string }> {
  try {
    await create;
  } catch (err) {
    return { status: apiStatus(err), message: apiMessage(err) };
  }
  throw new Error('the apiserver accepted the object');
}

describe('valid samples', () => {
  const samples = validSamples();

  it('has at least two per kind', () => {
    const perKind = new Map<string, number>();
    for (const s of samples) perKind.set(s.kind, (perKind.get(s.kind) ?? 0) + 1);
    expect(perKind.size).toBe(allKinds.length);
    for (const [kind, n] of perKind) expect({ kind, n: n >= 2 }).toEqual({ kind, n: true });
  });

  it.each(samples.map((s) => [`${s.kind}/${s.metadata.name}`, s] as const))(
    '%s is accepted, and zod reads the stored object to the same spec the apiserver defaulted',
    async (_title, s) => {
      const stored = (await api.create(inNs(s))) as Sample;
      const parsed = schemaOf(s.kind).parse(stored);
      expect(parsed.spec).toEqual(stored.spec);
      // zod's defaults are the CRD's defaults: the sent object parses to what the apiserver stored.
      expect(schemaOf(s.kind).parse(s).spec).toEqual(stored.spec);
    },
  );
});

describe('invalid objects', () => {
  it('are at least twelve', () => {
    expect(invalidCases.length).toBeGreaterThanOrEqual(12);
  });

  it.each(invalidCases.map((c) => [c.title, c] as const))('%s is refused, naming the field', async (_t, c) => {
    const { status, message } = await refusal(api.create(inNs(c.object)));
    expect(status).toBe(422);
    expect(message).toContain(`${c.field}:`);
    expect(message).toContain(c.says);
    expect(schemaOf(c.object.kind).safeParse(c.object).success).toBe(false);
  });

  it.each(invalidUpdates.map((u) => [u.title, u] as const))('%s is refused after creation', async (_t, u) => {
    const original = inNs(sample(u.kind, u.sample));
    original.metadata.name = `immutable-${u.kind.toLowerCase()}-${invalidUpdates.indexOf(u)}`;
    const stored = (await api.create(original)) as Sample;
    const changed = structuredClone(stored);
    u.change(changed.spec);
    const { status, message } = await refusal(api.replace(changed));
    expect(status).toBe(422);
    expect(message).toContain(`${u.field}:`);
    expect(message).toContain(u.says);
  });

  it('refuses a status phase the kind does not have', async () => {
    const va = inNs(sample('VectorActivation', 'activate-dev-2'));
    va.metadata.name = 'bad-phase';
    await api.create(va);
    const custom = kubeConfig().makeApiClient(k8s.CustomObjectsApi);
    const { status, message } = await refusal(
      custom.patchNamespacedCustomObjectStatus(
        {
          group: GROUP,
          version: VERSION,
          namespace: ns,
          plural: 'vectoractivations',
          name: 'bad-phase',
          body: { status: { phase: 'Done' } },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      ),
    );
    expect(status).toBe(422);
    expect(message).toContain('status.phase:');
    expect(message).toContain('Unsupported value: "Done"');
  });
});
