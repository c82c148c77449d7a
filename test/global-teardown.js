import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export default function globalTeardown() {
  if (process.env.KONFIDENCE_WORKFLOW_BUNDLE) rmSync(process.env.KONFIDENCE_WORKFLOW_BUNDLE, { force: true });
  if (process.env.KONFIDENCE_TEST_STARTED_ENV !== '1') return;
  execFileSync('npx', ['tsx', 'scripts/env-down.ts'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: 'inherit',
  });
}
