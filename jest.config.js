/**
 * jest in ESM mode (npm test passes --experimental-vm-modules): @kubernetes/client-node 1.x is
 * ESM-only and jest's CommonJS loader cannot require it.
 *
 * Two projects, run together by `npm test`:
 * - unit (`npm run test:unit`): test/unit/, pure tests and workflow tests on the time-skipping
 *   test server that each file starts for itself; no etcd, kube-apiserver or Temporal dev server.
 * - integration: every other test, against the real servers that its global setup starts once.
 * jest runs a project's global setup only when at least one of its tests is selected.
 */
import { bundledLibrary } from './test/unit/support/library-bundle.js';

const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  // Sources import './x.js' as Node's ESM resolution requires; jest resolves the .ts file.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  // The local servers' state (.cache/env: etcd's data has *.snap files, which jest would report as
  // obsolete snapshots and fail the run) is no part of the code.
  modulePathIgnorePatterns: ['<rootDir>/.cache/'],
};

/** @type {import('jest').Config} */
export default {
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
      // The Kubernetes client as one module (test/unit/support/library-bundle.js): jest links its
      // 967 modules anew in every file that reaches it, and the unit files are short (7 of the
      // project's 68 CPU seconds went to it). The integration project loads it as installed.
      moduleNameMapper: {
        '^@kubernetes/client-node$': bundledLibrary('@kubernetes/client-node'),
        ...common.moduleNameMapper,
      },
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/unit/'],
      // Node's, plus the termination of the Temporal workflows each file's namespaces left Running.
      testEnvironment: '<rootDir>/test/support/environment.js',
      // Starts (or reuses) etcd, kube-apiserver and the Temporal dev server once per run.
      globalSetup: '<rootDir>/test/global-setup.js',
      globalTeardown: '<rootDir>/test/global-teardown.js',
    },
  ],
  // jest reads the timeout from the top level only, not per project.
  testTimeout: 120_000,
  // Two cores, but most integration files wait more than they compute (gates, drains, watches,
  // a steady load): a third worker overlaps the waits. Measured on the 2-core machine, warm CI on a
  // clean clone: jest 852 s with 2 workers, 697 s with 3, every test passing in both.
  // `npm run test:unit` runs the unit project alone with 4: its four workflow files (each with its
  // own time-skipping server) then start side by side, and the short files follow on the worker
  // that frees first (31-33 s against 37 s with 3, on the same machine).
  maxWorkers: 3,
};
