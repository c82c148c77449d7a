/** The pure rules of which StageVersions a usage holds and which may be cleaned up. */
import type { StageVersionResource, StageVersionUsageResource, VectorActivationResource } from '../api/index.js';
import { cleanupCandidates, resolve, selects } from '../decisions/stage.js';

const V = 'landscape.konfidence.cloud/v1alpha1';
const sv = (name: string, revision: number, labels: Record<string, string> = {}): StageVersionResource => ({
  apiVersion: V,
  kind: 'StageVersion',
  metadata: { name, labels },
  spec: { stage: 'dev', vector: `v${revision}`, revision },
});
const usage = (spec: StageVersionUsageResource['spec']): StageVersionUsageResource => ({
  apiVersion: V,
  kind: 'StageVersionUsage',
  metadata: { name: 'u' },
  spec,
});
const va = (stageVersion: string, phase?: 'Succeeded'): VectorActivationResource => ({
  apiVersion: V,
  kind: 'VectorActivation',
  metadata: { name: `va-${stageVersion}` },
  spec: { stage: 'dev', stageVersion },
  ...(phase ? { status: { phase } } : {}),
});

describe('StageVersion usage rules', () => {
  const svs = [sv('dev-1', 1, { tier: 'a' }), sv('dev-2', 2, { tier: 'a', extra: 'x' }), sv('dev-3', 3, { tier: 'b' })];

  it('a selector holds every StageVersion carrying all its labels, newest first', () => {
    expect(
      resolve(usage({ reason: 'r', stageVersionSelector: { matchLabels: { tier: 'a' } } }), svs).map(
        (x) => x.metadata.name,
      ),
    ).toEqual(['dev-2', 'dev-1']);
    expect(selects(usage({ reason: 'r', stageVersionSelector: { matchLabels: {} } }), svs[0]!)).toBe(false);
  });

  it('keeps the newest unused StageVersions up to the limit, and any a pending activation names', () => {
    const used = [usage({ reason: 'r', stageVersionRef: { name: 'dev-3' } })];
    const names = (xs: StageVersionResource[]) => xs.map((x) => x.metadata.name);
    expect(names(cleanupCandidates('dev', svs, used, [], 1))).toEqual(['dev-1']);
    expect(names(cleanupCandidates('dev', svs, used, [], 0))).toEqual(['dev-2', 'dev-1']);
    expect(names(cleanupCandidates('dev', svs, used, [va('dev-1'), va('dev-2', 'Succeeded')], 0))).toEqual(['dev-2']);
  });
});
