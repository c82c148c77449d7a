/** The workflows' entry: the source under tsx, the compiled file in dist/ (the image, `npm run build`). */
import { fileURLToPath } from 'node:url';

const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
const modulePath = (module: string) => fileURLToPath(new URL(`../${module}.${extension}`, import.meta.url));

export const workflowsPath = modulePath('workflows/index');

/**
 * The modules every workflow in a worker shares: evaluated once in the sandbox's context instead of
 * once per workflow, which is what a cached workflow otherwise carries of them. Only modules with no
 * state of their own and no import of the SDK may be here (the SDK freezes what they export, and
 * their top level runs before any workflow exists): the pure decisions and the constants they read.
 * test/unit/shared-modules.test.ts holds every one to that.
 */
export const sharedModules = [
  'api/circuit-breaker-limits',
  'api/conditions',
  'api/progression-defaults',
  'decisions/activation',
  'decisions/analysis',
  'decisions/breaker',
  'decisions/data-plane-metrics',
  'decisions/newer',
  'decisions/progression',
  'decisions/status-write',
  'decisions/step-kinds/index',
  'decisions/supersede',
  'decisions/traffic',
  'shared/format',
  'shared/json-pointer',
  'shared/names',
  'shared/task-queues',
  'stage-lock/rules',
].map(modulePath);
