/**
 * Test workflows around the Stage lock: requesters that behave as an activation does towards its
 * lock (ask through the real requestStageLock activity, wait for the answer, release), and steady
 * traffic of them. Their results carry the workflow time of what happened, for assertions.
 */
import {
  condition,
  defineQuery,
  defineSignal,
  getExternalWorkflowHandle,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { LockActivities } from '../../../stage-lock/activities.js';
import {
  lockGrantedSignal,
  lockSupersededSignal,
  releaseLockSignal,
  stageLockWorkflowId,
} from '../../../stage-lock/contract.js';
import type { TestActivities } from './activities.js';

const { requestStageLock, releaseStageLock } = proxyActivities<LockActivities>({ startToCloseTimeout: '10 seconds' });
// Once: a second attempt would find the workflow terminated, and the first one's failure says why.
const { terminateWorkflow } = proxyActivities<TestActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 1 },
});

export interface RequesterInput {
  namespace: string;
  stage: string;
  revision: number;
  /** Keep the Stage once granted until the `finish` signal (default: release at once). */
  hold?: boolean;
  /** How the Stage is given back: by signal (default), or by Update as activations do now. */
  releaseBy?: 'signal' | 'update';
}

export interface RequesterResult {
  outcome: 'granted' | 'superseded';
  /** Workflow time of the answer. */
  at: number;
  /** For a superseded requester: the activation and revision that superseded it. */
  by?: string;
  byRevision?: number;
  /** Every notice received, in order: a requester must get exactly one answer. */
  notices: string[];
}

export const finishSignal = defineSignal('finish');
export const requesterQuery = defineQuery<RequesterResult | undefined>('requester');

/** The activation's side of the lock, reduced to the lock protocol; its workflow id is the requester. */
export async function lockRequester(input: RequesterInput): Promise<RequesterResult> {
  const notices: string[] = [];
  let result: RequesterResult | undefined;
  let finish = false;
  setHandler(lockGrantedSignal, () => {
    notices.push('granted');
    result ??= { outcome: 'granted', at: Date.now(), notices };
  });
  setHandler(lockSupersededSignal, ({ by, revision }) => {
    notices.push(`superseded by ${by} (${revision})`);
    result ??= { outcome: 'superseded', at: Date.now(), by, byRevision: revision, notices };
  });
  setHandler(finishSignal, () => {
    finish = true;
  });
  setHandler(requesterQuery, () => result);

  const requester = workflowInfo().workflowId;
  await requestStageLock(input.namespace, input.stage, { requester, revision: input.revision, activation: requester });
  await condition(() => result !== undefined);
  if (result!.outcome === 'granted') {
    if (input.hold) await condition(() => finish);
    const bySignal = () =>
      getExternalWorkflowHandle(stageLockWorkflowId(input.namespace, input.stage)).signal(releaseLockSignal, {
        requester,
      });
    // As StageAccess does: a release the lock did not answer goes by signal.
    if (input.releaseBy === 'update') await releaseStageLock(input.namespace, input.stage, requester).catch(bySignal);
    else await bySignal();
  }
  return result!;
}

export interface TrafficInput {
  namespace: string;
  stage: string;
  /** Workflow id of the holder to terminate (without releasing) after `terminateAfterMs`. */
  holder: string;
  terminateAfterMs: number;
  /** A new requester every `everyMs`, revisions rising from `firstRevision`, until one is granted. */
  everyMs: number;
  firstRevision: number;
  maxRequests: number;
}

export interface TrafficResult {
  startedAt: number;
  terminatedAt?: number;
  requests: { id: string; revision: number; at: number }[];
  granted?: { id: string; at: number };
  outcomes: Record<string, RequesterResult>;
}

/**
 * Steady traffic at a Stage's lock: a new requester every `everyMs` (each supersedes the one
 * before), while the holder is terminated in between; ends when a requester is granted.
 */
export async function lockTraffic(input: TrafficInput): Promise<TrafficResult> {
  const startedAt = Date.now();
  const result: TrafficResult = { startedAt, requests: [], outcomes: {} };
  const terminateAt = startedAt + input.terminateAfterMs;
  const prefix = workflowInfo().workflowId;

  for (let i = 0; i < input.maxRequests && !result.granted; i++) {
    const id = `${prefix}/requester-${i}`;
    const revision = input.firstRevision + i;
    const child = await startChild(lockRequester, {
      workflowId: id,
      args: [{ namespace: input.namespace, stage: input.stage, revision }],
    });
    result.requests.push({ id, revision, at: Date.now() });
    void child.result().then((outcome) => {
      result.outcomes[id] = outcome;
      if (outcome.outcome === 'granted') result.granted ??= { id, at: outcome.at };
    });
    const next = Date.now() + input.everyMs;
    if (result.terminatedAt === undefined && terminateAt < next) {
      await condition(() => result.granted !== undefined, Math.max(terminateAt - Date.now(), 1));
      await terminateWorkflow(input.holder);
      result.terminatedAt = Date.now();
    }
    await condition(() => result.granted !== undefined, Math.max(next - Date.now(), 1));
  }
  return result;
}
