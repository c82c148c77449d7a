/**
 * controllers/stage/written-statuses.ts: a pass sees the status the controller wrote while its cache
 * still holds the object as it was before that write, and the cache's own copy once it caught up.
 */
import { WrittenStatuses } from '../../controllers/stage/written-statuses.js';

const stage = (resourceVersion: string, status: Record<string, unknown>, name = 'shop') => ({
  metadata: { name, namespace: 'dev', resourceVersion },
  status,
});

describe('WrittenStatuses', () => {
  it.each([
    [
      'the cache still holds the object the write went over: the written status shows',
      '10',
      { phase: 'Ready', traffic: [1] },
    ],
    [
      'the cache holds the write (another resourceVersion): the cache shows',
      '11',
      { phase: 'Progressing', traffic: [] },
    ],
  ])('%s', (_n, cachedVersion, expected) => {
    const written = new WrittenStatuses();
    written.note('Stage', stage('10', {}), { phase: 'Ready', traffic: [1] });
    const cached =
      cachedVersion === '10'
        ? stage('10', { phase: 'Progressing', traffic: [] })
        : stage('11', { phase: 'Progressing', traffic: [] });
    expect(written.view('Stage', cached).status).toEqual(expected);
  });

  it('a null in the patch removes the field; other fields stay as cached', () => {
    const written = new WrittenStatuses();
    written.note('Stage', stage('10', {}), { message: null, phase: 'Ready' });
    expect(
      written.view('Stage', stage('10', { message: 'x', phase: 'Progressing', latestRevision: 3 })).status,
    ).toEqual({ phase: 'Ready', latestRevision: 3 });
  });

  it('two writes over the same cached object both show (the second was planned on the first)', () => {
    const written = new WrittenStatuses();
    written.note('Stage', stage('10', {}), { phase: 'Ready' });
    written.note('Stage', stage('10', {}), { traffic: [2] });
    expect(written.view('Stage', stage('10', { phase: 'Progressing' })).status).toEqual({
      phase: 'Ready',
      traffic: [2],
    });
  });

  it('once the cache caught up, an older copy no longer shows the note (it is forgotten)', () => {
    const written = new WrittenStatuses();
    written.note('Stage', stage('10', {}), { phase: 'Ready' });
    written.view('Stage', stage('11', { phase: 'Ready' }));
    expect(written.view('Stage', stage('10', { phase: 'Progressing' })).status).toEqual({ phase: 'Progressing' });
  });

  it('kinds and names are apart; a deleted object is forgotten by prune', () => {
    const written = new WrittenStatuses();
    written.note('Stage', stage('10', {}), { phase: 'Ready' });
    expect(written.view('StageVersionUsage', stage('10', { phase: 'Progressing' })).status).toEqual({
      phase: 'Progressing',
    });
    expect(written.view('Stage', stage('10', { phase: 'Progressing' }, 'other')).status).toEqual({
      phase: 'Progressing',
    });
    written.prune('Stage', 'dev', []);
    expect(written.view('Stage', stage('10', { phase: 'Progressing' })).status).toEqual({ phase: 'Progressing' });
  });

  it('a namespace no longer served is forgotten whole', () => {
    const written = new WrittenStatuses();
    written.note('Stage', stage('10', {}), { phase: 'Ready' });
    written.forget('dev');
    expect(written.view('Stage', stage('10', { phase: 'Progressing' })).status).toEqual({ phase: 'Progressing' });
  });
});
