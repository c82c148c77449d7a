/** worker/config.ts: what a process does with its environment, and the errors a typo gets. */
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../worker/config.js';

describe('loadConfig', () => {
  it('limits each namespace to 2 activating Stages unless told otherwise; 0 turns the limit off', () => {
    expect(loadConfig({}).KONFIDENCE_STAGES_PER_NAMESPACE).toBe(2);
    expect(loadConfig({ KONFIDENCE_STAGES_PER_NAMESPACE: '0' }).KONFIDENCE_STAGES_PER_NAMESPACE).toBe(0);
    expect(loadConfig({ KONFIDENCE_STAGES_PER_NAMESPACE: '16' }).KONFIDENCE_STAGES_PER_NAMESPACE).toBe(16);
  });

  it.each([
    ['a negative limit', { KONFIDENCE_STAGES_PER_NAMESPACE: '-1' }, 'KONFIDENCE_STAGES_PER_NAMESPACE:'],
    ['a limit that is no number', { KONFIDENCE_STAGES_PER_NAMESPACE: 'two' }, 'KONFIDENCE_STAGES_PER_NAMESPACE:'],
    [
      'an empty build id (the version label missing)',
      { KONFIDENCE_BUILD_ID: '' },
      'KONFIDENCE_BUILD_ID: empty: set it to the build (deploy/base/components/worker-versioning reads the Pod label app.kubernetes.io/version)',
    ],
    ['a build id with a space', { KONFIDENCE_BUILD_ID: 'v 1' }, 'KONFIDENCE_BUILD_ID: letters, digits'],
    [
      'a workflow bundle that is not there',
      { KONFIDENCE_WORKFLOW_BUNDLE: '/nonexistent/workflow-bundle.js' },
      'KONFIDENCE_WORKFLOW_BUNDLE: no such file: write it with "node dist/worker/workflow-bundle.js PATH"',
    ],
  ])('refuses %s, naming the variable', (_n, env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('takes a workflow bundle that is there; without one the core worker bundles at start', () => {
    expect(loadConfig({ KONFIDENCE_WORKFLOW_BUNDLE: fileURLToPath(import.meta.url) }).KONFIDENCE_WORKFLOW_BUNDLE).toBe(
      fileURLToPath(import.meta.url),
    );
    expect(loadConfig({}).KONFIDENCE_WORKFLOW_BUNDLE).toBeUndefined();
  });
});
