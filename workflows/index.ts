/** Every workflow of the project: the entry the worker bundles. */
export * from './control-plane-check.js';
export * from './activation/workflow.js';
export * from '../stage-lock/workflow.js';
export * from './landscape-report.js';
