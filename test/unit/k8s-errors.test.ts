/** Which failures of a Kubernetes call an activity retries and which fail it at once (activities/k8s-errors.ts). */
import { ApplicationFailure } from '@temporalio/common';
import { activityFailure } from '../../activities/k8s-errors.js';
import { k8s } from '../../k8s/client.js';
import { InvalidObjectError } from '../../k8s/typed.js';

const refused = (code: number) => new k8s.ApiException(code, `HTTP ${code}`, { message: `refused with ${code}` }, {});

describe('activityFailure: what no retry can mend fails fast, with the operation named', () => {
  it.each([
    ['403 (RBAC)', 'Forbidden', refused(403)],
    ['422 (invalid object)', 'Invalid', refused(422)],
    ['400', 'BadRequest', refused(400)],
    [
      'an object that does not match its schema',
      'InvalidObject',
      new InvalidObjectError('ActivationTaskRegistration ns/x does not match its schema: spec.type: Required'),
    ],
  ])('%s: non-retryable, type %s', (_name, type, err) => {
    const failure = activityFailure(err, 'resolvePlan');
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type, nonRetryable: true });
    expect((failure as Error).message).toMatch(/^resolvePlan: /);
  });

  it.each([
    ['409 (conflict)', refused(409)],
    ['429 (throttled)', refused(429)],
    ['500', refused(500)],
    ['a dropped connection', new Error('socket hang up')],
  ])('%s: retried as it is', (_name, err) => expect(activityFailure(err, 'resolvePlan')).toBe(err));
});
