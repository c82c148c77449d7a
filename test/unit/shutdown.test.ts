/** How a role's process ends on a signal (worker/shutdown.ts), with a stand-in for the process. No servers. */
import { EventEmitter } from 'node:events';
import { pollUntil } from '../../scripts/env/process.js';
import { Shutdown } from '../../worker/shutdown.js';

function setUp(graceMs = 60_000) {
  const emitter = new EventEmitter();
  const exits: number[] = [];
  const shutdown = new Shutdown({
    graceMs,
    log: () => undefined,
    exit: (code) => void exits.push(code),
    on: (signal, handler) => emitter.on(signal, handler),
  });
  let signalled: string | undefined;
  void shutdown.signalled.then((s) => (signalled = s));
  return { shutdown, exits, send: (s: NodeJS.Signals) => emitter.emit(s), signalled: () => signalled };
}

it('a signal during start-up exits at once: nothing acts yet', () => {
  const t = setUp();
  t.send('SIGTERM');
  expect(t.exits).toEqual([0]);
});

it('once started, a signal begins the graceful stop and does not exit by itself', async () => {
  const t = setUp();
  t.shutdown.started();
  t.send('SIGINT');
  await pollUntil(() => t.signalled(), 2_000, 'the stop to begin', 5);
  expect({ signalled: t.signalled(), exits: t.exits }).toEqual({ signalled: 'SIGINT', exits: [] });
});

it('a graceful stop that outlasts the grace period ends in an exit', async () => {
  const t = setUp(50);
  t.shutdown.started();
  t.send('SIGTERM');
  await pollUntil(() => (t.exits.length ? t.exits : undefined), 5_000, 'the exit after the grace period', 5);
  expect(t.exits).toEqual([1]);
});

it('a second signal exits at once', () => {
  const t = setUp();
  t.shutdown.started();
  t.send('SIGTERM');
  t.send('SIGTERM');
  expect(t.exits).toEqual([1]);
});
