/**
 * Every `patched()` id the workflows use: what the new branch changed, when it was added, and when
 * the old branch may go. An id may go once no open workflow can replay the old branch (docs/scale.md,
 * "The upgrade window"): an activation is open up to its 7-day retry window on the build that
 * started it; a Stage lock lives on through continue-as-new, so a lock id may go only once every
 * lock has continued as new or finished (idle for 10 s) on a build with it.
 * test/unit/patches.test.ts keeps this list and the code's `patched()` calls in step.
 */
export type Workflow = 'activation' | 'stage-lock';

export interface Patch {
  workflow: Workflow;
  /** What the new branch does instead of the old one. */
  changed: string;
  /** The day the build with it was first made. */
  added: string;
}

export const PATCHES: Record<string, Patch> = {
  'validate-while-pending': { workflow: 'activation', added: '2026-11-30', changed: 'the Stage and StageVersion are checked while Pending is written, not after' },
  'breakers-read-with-stage': { workflow: 'activation', added: '2026-11-30', changed: "whether a CircuitBreaker guards the namespace is read with the Stage's state" },
  'circuit-breaker': { workflow: 'activation', added: '2026-11-29', changed: 'CircuitBreakers admit the first routing change and count a failed attempt' },
  'events-in-status-write': { workflow: 'activation', added: '2026-11-29', changed: "a transition's Events are recorded by its status write, not by a separate activity" },
  'final-marks-together': { workflow: 'activation', added: '2026-11-30', changed: 'the serving mark and the active usage move together, then the old marks go together' },
  'finish-in-one': { workflow: 'activation', added: '2026-11-30', changed: 'the Lease, the in-activation mark and the final status in one local activity' },
  'phase-attribute-on-change': { workflow: 'activation', added: '2026-11-30', changed: 'the ActivationPhase search attribute is upserted only when the phase changes' },
  'stage-taken-in-one': { workflow: 'activation', added: '2026-11-30', changed: "the Lease and the Stage's state, plan and breakers in one local activity (takeStage)" },
  'step-report-beside-tasks': { workflow: 'activation', added: '2026-11-30', changed: "a step's InProgress is written while its executions are created" },
  'step-started-with-hold': { workflow: 'activation', added: '2026-11-30', changed: "the hold, the mark and the first step's InProgress in one local activity (startRun)" },
  'switch-serving-in-one': { workflow: 'activation', added: '2026-11-30', changed: 'the serving switch in one local activity (switchServing)' },
  'usage-freed-when-nothing-ran': { workflow: 'activation', added: '2026-11-30', changed: 'a Failed or Cancelled activation that ran no step gives its usage back' },
  'execution-status-beside-next': { workflow: 'activation', added: '2026-11-30', changed: "a succeeded execution's final status is written while the next step runs" },
  'lock-request-local': { workflow: 'activation', added: '2026-11-30', changed: 'the Stage lock is asked from a local activity' },
  'lock-request-update': { workflow: 'activation', added: '2026-11-30', changed: 'the Stage lock is asked by an Update (answered at once), not a signal' },
  'lock-release-update': { workflow: 'activation', added: '2026-11-30', changed: 'the Stage lock is released by an Update and the releaser tells the next holder' },
  'revert-from-record': { workflow: 'activation', added: '2026-12-01', changed: "a revert puts back each task's record (every task that ran and recorded), not a move back to the previous version" },
  'retry-from-truth': { workflow: 'activation', added: '2026-12-01', changed: 'a retry runs every step again beside the version active now, keeping earlier records of untouched rules' },
  'partly-applied-from-records': { workflow: 'activation', added: '2026-12-01', changed: 'a failure under Stop names as maybe partly applied only the steps whose refused tasks recorded a rule' },
  'gone-is-deleted': { workflow: 'activation', added: '2026-12-01', changed: 'a status write that finds the VectorActivation gone counts as its deletion' },
  'expect-lock': { workflow: 'stage-lock', added: '2026-11-30', changed: "the lock withholds grants from older requests while a burst's newest is expected" },
  'finish-after-release-update': { workflow: 'stage-lock', added: '2026-11-30', changed: 'an idle lock finishes in a workflow task of its own after a release Update' },
  'idle-linger': { workflow: 'stage-lock', added: '2026-12-01', changed: 'an idle lock lingers 10 s for a next request before it finishes' },
};
