/** The watcher imports expectStageLock from here; the lock's activities are stage-lock/activities.ts. */
export { expectStageLock } from '../stage-lock/activities.js';
