/**
 * Waiting for the Events this test process sends in the background (k8s/events.ts sendEvents: the
 * activities, Stage controllers and watchers that run in the test process) to be written, so that
 * a check for "no second Event" looks after a duplicate would have landed, not before.
 */
import { flushEvents } from '../../k8s/events.js';

/**
 * Resolves once every Event sent so far in this process is written (or failed for good). A flush
 * that runs out of time drops what waits, which would hide a duplicate: that throws instead.
 */
export async function eventsWritten(timeoutMs = 30_000): Promise<void> {
  if (!(await flushEvents(timeoutMs))) throw new Error(`the background Events were not written within ${timeoutMs} ms`);
}
