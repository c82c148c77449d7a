/** The README's first command: `npm start` prints what a newcomer needs and its workflow completes. */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pollUntil } from '../scripts/env/process.js';
import { kubectl } from './support/cluster.js';
import { temporalClient } from './support/temporal.js';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('quick start', () => {
  it('npm start brings up the system, runs the sample activation and prints where to look', async () => {
    // --once: the same start, but exit after the first workflow instead of serving until Ctrl-C.
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'scripts/start.ts', '--once'], {
      cwd: root,
      // Only the sample's namespace: the other test files' activations belong to their own systems.
      env: { ...process.env, KONFIDENCE_WATCH_NAMESPACES: 'konfidence-sample' },
    });
    const field = (label: string) => stdout.match(new RegExp(`${label}\\s+(\\S+)`))?.[1];
    expect(field('Temporal UI')).toBe(process.env.TEMPORAL_UI_URL);
    expect(field('kubeconfig')).toBe(process.env.KUBECONFIG);
    expect(stdout).toContain('kubectl get konfidence -n konfidence-sample');
    // The flow a user lives, each step as it happened: vector change, StageVersion, Ready, activation.
    expect(stdout).toMatch(
      /1\. Stage shop: spec\.vector set to \S+:1\.0\.(\d+)[^\n]*\n(?:.*\n)*?\s+2\. StageVersion (shop-\d+) \(revision \d+\) created by the Stage controller\n(?:.*\n)*?\s+3\. StageVersion \2 marked Ready[^\n]*\n(?:.*\n)*?\s+4\. VectorActivation (activate-\2) created by the Stage controller/,
    );
    // A canary: it waits at 50 %, its analysis passed, for the approval whose command it prints.
    expect(stdout).toMatch(
      /The canary sends 50 % to shop-\d+, its analysis passed, and it waits for your approval:\n\s+npx konfidence approve activate-shop-\d+ -n konfidence-sample/,
    );
    // Live traffic: the requests through the gateway split about as recorded (5 s of 20 requests a second).
    const [, count, first, firstShare, second, secondShare] =
      stdout.match(/the gateway sent the last (\d+) requests to: (shop-\d+) (\d+) %, (shop-\d+) (\d+) %/) ?? [];
    expect(Number(count)).toBeGreaterThan(50);
    const newest = Number(first!.split('-')[1]) > Number(second!.split('-')[1]) ? firstShare : secondShare;
    expect(Math.abs(Number(newest) - 50)).toBeLessThanOrEqual(20);
    expect(stdout).toMatch(/sample activation Succeeded: Stage shop now serves shop-\d+/);

    const link = field('sample activation')!;
    expect(link.startsWith(`${process.env.TEMPORAL_UI_URL}/namespaces/default/workflows/`)).toBe(true);
    const workflowId = decodeURIComponent(link.split('/').pop()!);
    // npm start runs in the namespace a person looks at, not the tests' own.
    const { client, close } = await temporalClient('default');
    try {
      const description = await client.workflow.getHandle(workflowId).describe();
      expect(description.status.name).toBe('COMPLETED');
    } finally {
      await close();
    }
    expect((await fetch(link)).status).toBe(200);
  });

  it('run again right after the sample namespace was deleted, it waits for the namespace to go, then runs the sample afresh', async () => {
    // A finalizer of the test's own keeps the namespace terminating until npm start says it waits
    // (without it, the namespace may be gone before the sample looks: nothing to wait for).
    const hold = 'test.konfidence.cloud/hold';
    await kubectl('create', 'configmap', 'hold', '-n', 'konfidence-sample');
    await kubectl(
      'patch',
      'configmap',
      'hold',
      '-n',
      'konfidence-sample',
      '--type=merge',
      '-p',
      JSON.stringify({ metadata: { finalizers: [hold] } }),
    );
    await kubectl('delete', 'namespace', 'konfidence-sample', '--wait=false');
    const release = () =>
      kubectl(
        'patch',
        'configmap',
        'hold',
        '-n',
        'konfidence-sample',
        '--type=merge',
        '-p',
        JSON.stringify({ metadata: { finalizers: null } }),
      ).catch(() => undefined);
    // Its own process group: npx, tsx and the system go together if the test gives up.
    const child = spawn('npx', ['tsx', 'scripts/start.ts', '--once'], {
      cwd: root,
      env: { ...process.env, KONFIDENCE_WATCH_NAMESPACES: 'konfidence-sample' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    child.stdout!.on('data', (d) => (stdout += String(d)));
    const exited = once(child, 'exit');
    try {
      await pollUntil(
        () => stdout.includes('namespace konfidence-sample is being deleted: waiting for it to go') || undefined,
        60_000,
        `npm start to wait for the namespace (said: ${stdout.slice(-500)})`,
        100,
      );
      await release();
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      await release();
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
    // A new Stage: it starts out serving shop-1 again, and the canary moves it to shop-2.
    expect(stdout).toMatch(/0\. Stage shop serves shop-1 /);
    expect(stdout).toMatch(/sample activation Succeeded: Stage shop now serves shop-2 \(was shop-1\)/);
    expect(stdout).not.toContain('HTTP-Code');
  }, 240_000);
});
