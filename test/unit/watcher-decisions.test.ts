/** What the watcher does per VectorActivation (decisions/watcher.ts), a row per rule. No servers. */
import {
  beforeStartAnswer,
  closedWorkflowEnding,
  requestToken,
  watcherActions,
  type ObservedActivation,
} from '../../decisions/watcher.js';

const observed = (o: Partial<ObservedActivation>): ObservedActivation => ({
  deleting: false,
  annotations: {},
  answered: [],
  ...o,
});
const RETRY = 'konfidence.cloud/retry';
const CANCEL = 'konfidence.cloud/cancel';

describe('watcherActions: the status is the record of what ran', () => {
  it.each([
    ['a new object gets its workflow', {}, [{ kind: 'ensure' }]],
    ['an unfinished one is ensured (a lost workflow is started again)', { phase: 'InProgress' }, [{ kind: 'ensure' }]],
    ['a Succeeded one is left alone', { phase: 'Succeeded' }, []],
    ['a Skipped one is left alone', { phase: 'Skipped' }, []],
    ['a Failed one without a retry request is left alone', { phase: 'Failed' }, []],
    ['a deleting one is left alone', { phase: 'InProgress', deleting: true }, []],
    [
      'a deleting one with the close-out finalizer: the deletion goes to its workflow, or a close-out',
      { phase: 'InProgress', deleting: true, closing: true },
      [{ kind: 'deleted' }],
    ],
    [
      'a final one with the finalizer left (a crash before it went): let go too',
      { phase: 'Failed', deleting: true, closing: true },
      [{ kind: 'deleted' }],
    ],
    [
      'a retry of a Failed one is handed to its workflow',
      { phase: 'Failed', annotations: { [RETRY]: '1' } },
      [{ kind: 'relay', action: 'retry', token: `${RETRY}=1` }],
    ],
    [
      'an answered retry is not asked again',
      { phase: 'Failed', annotations: { [RETRY]: '1' }, answered: [{ action: 'retry' as const, token: `${RETRY}=1` }] },
      [],
    ],
    [
      'a new value is a new request',
      { phase: 'Failed', annotations: { [RETRY]: '2' }, answered: [{ action: 'retry' as const, token: `${RETRY}=1` }] },
      [{ kind: 'relay', action: 'retry', token: `${RETRY}=2` }],
    ],
    [
      'a cancel of a running one is relayed after ensuring',
      { phase: 'Waiting', annotations: { [CANCEL]: 'x' } },
      [{ kind: 'ensure' }, { kind: 'relay', action: 'cancel', token: `${CANCEL}=x` }],
    ],
  ])('%s', (_n, o, expected) => expect(watcherActions(observed(o))).toEqual(expected));

  it.each([
    ['retry', 'Succeeded', RETRY],
    ['cancel', 'Skipped', CANCEL],
  ] as const)('a %s of a %s activation is refused without Temporal, saying why', (action, phase, annotation) => {
    const [a] = watcherActions(observed({ phase, annotations: { [annotation]: 'now' } }));
    expect(a).toEqual({
      kind: 'refuse',
      action,
      token: requestToken(action, 'now'),
      message: expect.stringMatching(new RegExp(`^refused: the activation is ${phase}`)),
    });
  });
});

describe("a progressive activation's approve, promote and abort annotations", () => {
  const APPROVE = 'konfidence.cloud/approve';
  const ABORT = 'konfidence.cloud/abort';
  it('are relayed with who asked: the user name the value starts with', () => {
    expect(watcherActions(observed({ phase: 'InProgress', annotations: { [APPROVE]: 'alice looks good' } }))).toEqual([
      { kind: 'ensure' },
      { kind: 'relay', action: 'approve', token: `${APPROVE}=alice looks good`, by: 'alice' },
    ]);
    expect(
      watcherActions(observed({ phase: 'InProgress', annotations: { [APPROVE]: 'system:serviceaccount:ci:bot' } }))[1],
    ).toMatchObject({ by: 'system:serviceaccount:ci:bot' });
  });
  it('an abort of a Succeeded activation is refused without Temporal, with the way back', () => {
    expect(watcherActions(observed({ phase: 'Succeeded', annotations: { [ABORT]: 'bob 1' } }))).toEqual([
      {
        kind: 'refuse',
        action: 'abort',
        token: `${ABORT}=bob 1`,
        by: 'bob',
        message: expect.stringContaining('to go back, activate the previous StageVersion'),
      },
    ]);
  });
  it('an answered one is not asked again', () => {
    expect(
      watcherActions(
        observed({
          phase: 'InProgress',
          annotations: { [APPROVE]: 'alice 1' },
          answered: [{ action: 'approve', token: `${APPROVE}=alice 1` }],
        }),
      ),
    ).toEqual([{ kind: 'ensure' }]);
  });
});

describe('beforeStartAnswer: a request to an activation whose workflow has not started', () => {
  it.each([
    ['cancel ends it where it waits', 'cancel', { cancel: true }],
    [
      'retry has nothing to retry',
      'retry',
      { refused: expect.stringMatching(/^refused: the activation has not started yet .*nothing to retry$/) },
    ],
    ['approve has nothing waiting', 'approve', { refused: expect.stringMatching(/nothing waits for an answer$/) }],
    ['promote has nothing waiting', 'promote', { refused: expect.stringMatching(/nothing waits for an answer$/) }],
    ['abort has nothing waiting', 'abort', { refused: expect.stringMatching(/nothing waits for an answer$/) }],
  ] as const)('%s', (_n, action, expected) => expect(beforeStartAnswer(action)).toEqual(expected));
});

describe('closedWorkflowEnding: why an unfinished activation was closed out', () => {
  it.each([
    ['TERMINATED', 'WorkflowTerminated', 'was terminated'],
    ['TIMED_OUT', 'WorkflowTimedOut', 'timed out'],
    ['FAILED', 'WorkflowFailed', 'failed'],
    ['COMPLETED', 'WorkflowCompleted', 'without writing a final status'],
    ['SOMETHING_NEW', 'WorkflowClosed', 'closed (SOMETHING_NEW)'],
  ])('%s → %s', (status, reason, text) => {
    const ending = closedWorkflowEnding(status, 'wf-1');
    expect(ending.reason).toBe(reason);
    expect(ending.message).toContain(text);
    expect(ending.message).toContain('wf-1');
  });
});
