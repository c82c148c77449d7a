/** What a progression decides (decisions/progression.ts): steps, gates, answers, the abort's weights, background analyses. No servers. */
import {
  abortWeights,
  afterGate,
  answerProgression,
  backgroundAt,
  gateOf,
  stepKind,
  stepLabel,
  gateReason,
  leaseSecondsOver,
  type GateEnd,
  type ProgressionSpec,
  type ProgressionView,
} from '../../decisions/progression.js';

describe('stepKind: what a progression step does, defaults filled in', () => {
  it.each([
    [{ setWeight: 10 }, { kind: 'weight', weight: 10 }],
    [{ pause: { durationSeconds: 600 } }, { kind: 'pause', seconds: 600 }],
    [{ pause: {} }, { kind: 'approval', seconds: 86400, onTimeout: 'Abort' }],
    [
      { pause: { timeoutSeconds: 3600, onTimeout: 'Continue' as const } },
      { kind: 'approval', seconds: 3600, onTimeout: 'Continue' },
    ],
    [{ analysis: { name: 'errors' } }, { kind: 'analysis', analysis: 'errors' }],
    [
      { webhook: { url: 'http://x', timeoutSeconds: 5, retries: 1 } },
      { kind: 'webhook', url: 'http://x', timeoutSeconds: 5, retries: 1 },
    ],
  ])('%j', (step, kind) => expect(stepKind(step)).toEqual(kind));
});

describe('gateOf: where a pause waits, and until when', () => {
  it('a timed pause ends by itself and goes on', () => {
    expect(gateOf({ kind: 'pause', seconds: 259200 }, 1_000, 'step 2/5')).toEqual(
      expect.objectContaining({ type: 'Pause', until: 1_000 + 259_200_000, onTimeout: 'next' }),
    );
  });
  it.each([
    ['Abort', 'abort'],
    ['Continue', 'next'],
  ] as const)('an approval that times out, onTimeout %s, goes %s', (onTimeout, next) => {
    const gate = gateOf({ kind: 'approval', seconds: 60, onTimeout }, 0, 'step 3/5')!;
    expect(gate).toEqual(expect.objectContaining({ type: 'Approval', until: 60_000 }));
    expect(afterGate(gate, 'timedOut')).toBe(next);
  });
  it('a weight is no gate', () => expect(gateOf({ kind: 'weight', weight: 10 }, 0, 'x')).toBeUndefined());
});

describe('afterGate: what ends a wait decides where the activation goes', () => {
  it.each<[GateEnd, string]>([
    ['approved', 'next'],
    ['promoted', 'promote'],
    ['aborted', 'abort'],
    ['analysisFailed', 'abort'],
    ['cancelled', 'cancel'],
    ['superseded', 'supersede'],
  ])('%s → %s', (end, next) => expect(afterGate({ onTimeout: 'abort' }, end)).toBe(next));
});

describe('answerProgression: accepted, or refused saying why', () => {
  const running: ProgressionView = { phase: 'InProgress', progressive: true };
  it.each<[string, 'approve' | 'promote' | 'abort', ProgressionView, string | undefined]>([
    ['approve at an approval', 'approve', { ...running, gate: 'Approval' }, undefined],
    ['approve at a timed pause ends it', 'approve', { ...running, gate: 'Pause' }, undefined],
    ['approve of an inconclusive analysis', 'approve', { ...running, gate: 'Inconclusive' }, undefined],
    ['approve while a weight is set', 'approve', running, 'nothing waits for an approval now'],
    [
      'approve during an analysis',
      'approve',
      { ...running, gate: 'Analysis' },
      'which decides by itself; promote skips it',
    ],
    ['promote during an analysis', 'promote', { ...running, gate: 'Analysis' }, undefined],
    ['promote at the switch', 'promote', { ...running, ending: 'switching' }, 'the switch to 100 % runs'],
    [
      'abort at the switch: not yet succeeded, still taken back',
      'abort',
      { ...running, ending: 'switching' },
      undefined,
    ],
    ['abort twice', 'abort', { ...running, ending: 'aborting' }, 'aborting already'],
    [
      'a second answer before the first is acted on',
      'approve',
      { ...running, gate: 'Approval', pending: 'approve' },
      'approve was accepted already',
    ],
    [
      'abort after a full promotion (Succeeded)',
      'abort',
      { phase: 'Succeeded' },
      'to go back, activate the previous StageVersion',
    ],
    ['approve once Failed', 'approve', { phase: 'Failed' }, 'the activation is Failed'],
    ['abort while waiting for the Stage', 'abort', { phase: 'Waiting' }, 'cancel it instead'],
    [
      'approve of a plan without a progression',
      'approve',
      { phase: 'InProgress', progressive: false },
      'has no progression',
    ],
  ])('%s', (_n, action, view, refusal) => {
    const a = answerProgression(action, view);
    if (refusal === undefined) expect(a).toEqual({ accepted: true });
    else expect(a).toEqual({ accepted: false, message: expect.stringContaining(refusal) });
    if (!a.accepted) expect(a.message).toMatch(/^refused: /);
  });
});

describe('abortWeights: down through the ramp below where the new version is', () => {
  it.each([
    [50, [10, 25, 40], [40, 25, 10]],
    [100, [50, 10], [50, 10]],
    [10, [50, 25], []],
    [50, undefined, []],
    [50, [25, 25, 50], [25]],
  ])('at %i with %j → %j', (current, ramp, weights) => expect(abortWeights(current, ramp)).toEqual(weights));
});

describe('backgroundAt: a background analysis runs from its step up to, not including, its end', () => {
  const p: ProgressionSpec = {
    steps: [
      { setWeight: 10, name: 'ten' },
      { pause: {} },
      { setWeight: 50, name: 'fifty' },
      { pause: {}, name: 'hold' },
    ],
    background: [
      { analysis: 'errors', from: 'ten', to: 'hold' },
      { analysis: 'latency', from: 'fifty' },
      { analysis: 'all' },
    ],
  };
  it.each([
    [0, ['errors', 'all']],
    [1, ['errors', 'all']],
    [2, ['errors', 'latency', 'all']],
    [3, ['latency', 'all']],
  ])('step %i: %j', (i, names) => expect(backgroundAt(p, i)).toEqual(names));
  it('labels steps for people', () => {
    expect(stepLabel(p, 2)).toBe('step 3/4 (fifty)');
    expect(stepLabel(p, 1)).toBe('step 2/4');
    expect(stepLabel(p, 4)).toBe('the switch to 100 % (after step 4/4)');
  });
});

describe('leaseSecondsOver: a wait takes the Lease once for its length and a margin', () => {
  it.each([
    [0, 300],
    [60_000, 60 + 300],
    [3_600_000, 3600 + 300],
    [259_200_000, 259200 + 300],
  ])('a wait of %s ms → %s s', (wait, seconds) => expect(leaseSecondsOver(wait)).toBe(seconds));
});

describe('gateReason: the status reason at each gate', () => {
  it.each([
    ['Pause', 'Paused'],
    ['Approval', 'WaitingForApproval'],
    ['Inconclusive', 'Inconclusive'],
    ['Analysis', 'Analyzing'],
    ['Webhook', 'CallingWebhook'],
  ] as const)('%s → %s', (type, reason) => expect(gateReason(type)).toBe(reason));
});
