/** What every part of an activation's run shares: the run-scoped state, each part owning its own. */
import type { LoadedActivation } from '../../activities/core.js';
import type { StepProgress } from '../../decisions/activation.js';
import type { ActivationProgress, ActivationRef } from '../../shared/activation.js';
import type { StageAccess } from '../../stage-lock/client.js';
import type { RunHoldings } from './holdings.js';
import type { ActivationReporter } from './reporter.js';
import type { ActivationRequests } from './requests.js';
import type { StepRunner } from './steps.js';

export interface RunOptions {
  /** Base URL of the Temporal UI, for the link in the VectorActivation's status. */
  uiUrl?: string;
  /** Appended to executor task queue names (tests isolate their workers this way). */
  queueSuffix?: string;
  /** How often a waiting activation asks its Stage's lock again (default 120 s; tests shorten it). */
  lockAskAgainSeconds?: number;
  /** How long an activation waits for another holder's Stage Lease before it fails (default LEASE_WAIT_SECONDS, workflows/policies.ts). */
  leaseWaitSeconds?: number;
}

export interface RunParts {
  readonly ref: ActivationRef;
  readonly va: LoadedActivation;
  readonly requests: ActivationRequests;
  readonly progress: ActivationProgress & { steps: StepProgress[] };
  readonly reporter: ActivationReporter;
  readonly holdings: RunHoldings;
  readonly steps: StepRunner;
  /** The Stage's lock and Lease, as this activation asks for them. */
  readonly access: StageAccess;
  readonly holder: string;
  readonly options: RunOptions;
}
