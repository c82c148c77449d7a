/**
 * Workflow tests without any server of the project's: each test file starts the Temporal
 * time-skipping test server (Java, installed by scripts/build/temporal-test-server/install.sh) on a
 * port of its own, and the workflow bundle that bundle-cache.ts keeps.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { freePort } from '../../../shared/free-port.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type WorkflowBundle } from '@temporalio/worker';
import { cachedBundle } from './bundle-cache.js';
import { binCache, repoRoot, versions } from '../../../scripts/env/paths.js';

try {
  // The lock logs warnings on purpose in these tests (holders found closed, failed checks), and the
  // SDK's core warns on every worker that the test server lacks a capability the tests do not use.
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
} catch {
  // installed already in this worker process
}

const version = versions.TEMPORAL_TEST_SERVER_VERSION;
if (!version) throw new Error('scripts/versions.env lacks TEMPORAL_TEST_SERVER_VERSION');

/** The wrapper script that runs the Java test server (`<port>` as its argument). */
export const testServerPath = join(binCache, `temporal-test-server-${version}`, 'temporal-test-server');

let installed = false;
/**
 * Installs the test server unless this machine has it (Maven, seconds; cached by version), and
 * refreshes the wrapper script when this checkout changed it. Once per test file.
 */
export function ensureTestServer(): string {
  if (!installed) {
    try {
      execFileSync('bash', [join(repoRoot, 'scripts', 'build', 'temporal-test-server', 'install.sh')], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    } catch (err) {
      const { stdout, stderr } = err as { stdout?: string; stderr?: string };
      throw new Error(`installing the Temporal test server failed:\n${stdout ?? ''}${stderr ?? ''}`);
    }
    installed = true;
  }
  return testServerPath;
}

/**
 * A time-skipping environment on the installed test server. The SDK gives the server 5 s to accept
 * connections, which a JVM on two busy cores can miss, and then leaves it running: the wrapper
 * writes its PID by port, so a missed start is stopped and tried again.
 */
export async function timeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const path = ensureTestServer();
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const pidFile = join(tmpdir(), `konfidence-temporal-test-server.${port}.pid`);
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({
        server: { port, executable: { type: 'existing-path', path } },
      });
    } catch (err) {
      if (attempt >= 3 || !/Failed connecting to test server|did not start within/.test(String(err))) throw err;
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : NaN;
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // exited already
        }
      }
    } finally {
      rmSync(pidFile, { force: true });
    }
  }
}

/** The project's workflows plus the test workflows of test/unit/support/workflows.ts. */
export const testWorkflowsPath = fileURLToPath(new URL('./workflows.ts', import.meta.url));

let bundle: Promise<WorkflowBundle> | undefined;
/** Bundling takes seconds: once for every test file, and again only when a source changed (bundle-cache.ts). */
export function testWorkflowBundle(): Promise<WorkflowBundle> {
  bundle ??= cachedBundle(testWorkflowsPath);
  return bundle;
}
