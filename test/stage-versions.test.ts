/** The pure rules of which StageVersions a usage holds and which may be cleaned up. */
import { cleanupCandidates, resolve, selects } from '../controllers/stage-versions.js';
import type { CustomObject } from '../k8s/custom-objects.js';

const sv = (name: string, revision: number, labels: Record<string, string> = {}): CustomObject => ({
  apiVersion: 'v', kind: 'StageVersion', metadata: { name, labels }, spec: { stage: 'dev', revision },
});
const usage = (spec: object): CustomObject => ({ apiVersion: 'v', kind: 'StageVersionUsage', metadata: { name: 'u' }, spec });
const va = (stageVersion: string, phase?: string): CustomObject => ({
  apiVersion: 'v', kind: 'VectorActivation', metadata: { name: `va-${stageVersion}` }, spec: { stage: 'dev', stageVersion }, ...(phase ? { status: { phase } } : {}),
});

describe('StageVersion usage rules', () => {
  const svs = [sv('dev-1', 1, { tier: 'a' }), sv('dev-2', 2, { tier: 'a', extra: 'x' }), sv('dev-3', 3, { tier: 'b' })];

  it('a selector holds every StageVersion carrying all its labels, newest first', () => {
    expect(resolve(usage({ stageVersionSelector: { matchLabels: { tier: 'a' } } }), svs).map((x) => x.metadata.name)).toEqual(['dev-2', 'dev-1']);
    expect(selects(usage({ stageVersionSelector: { matchLabels: {} } }), svs[0]!)).toBe(false);
  });

  it('keeps the newest unused StageVersions up to the limit, and any a pending activation names', () => {
    const used = [usage({ stageVersionRef: { name: 'dev-3' } })];
    const names = (xs: CustomObject[]) => xs.map((x) => x.metadata.name);
    expect(names(cleanupCandidates('dev', svs, used, [], 1))).toEqual(['dev-1']);
    expect(names(cleanupCandidates('dev', svs, used, [], 0))).toEqual(['dev-2', 'dev-1']);
    expect(names(cleanupCandidates('dev', svs, used, [va('dev-1'), va('dev-2', 'Succeeded')], 0))).toEqual(['dev-2']);
  });
});
