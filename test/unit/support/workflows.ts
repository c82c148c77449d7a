/**
 * The workflow bundle of the unit tests: every workflow of the project (a bundle has one entry)
 * plus small workflows that play the other side of a protocol.
 */
export * from '../../../workflows/index.js';
export * from './lock-workflows.js';
