/**
 * jest in ESM mode (npm test passes --experimental-vm-modules): @kubernetes/client-node 1.x is
 * ESM-only and jest's CommonJS loader cannot require it.
 * @type {import('jest').Config}
 */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  // Sources import './x.js' as Node's ESM resolution requires; jest resolves the .ts file.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // Starts (or reuses) etcd, kube-apiserver and the Temporal dev server once per run.
  globalSetup: '<rootDir>/test/global-setup.js',
  globalTeardown: '<rootDir>/test/global-teardown.js',
  testTimeout: 120_000,
  // Two cores: the servers need one; more test workers only make every test slower.
  maxWorkers: 2,
};
