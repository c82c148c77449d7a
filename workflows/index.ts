/** Every workflow of the project: the entry the worker bundles. */
export * from './control-plane-check.js';
