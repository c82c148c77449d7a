/** How a Stage controller is set up (worker/main.ts from the environment, tests directly). */
import type { k8s } from '../../k8s/client.js';
import type { Leadership } from '../../k8s/leader-election.js';
import type { LogFn } from '../../telemetry/log.js';

export interface StageControllerOptions {
  kubeConfig: k8s.KubeConfig;
  /** Namespaces to manage; default all. */
  namespaces?: string[];
  /**
   * The system namespace (KONFIDENCE_SYSTEM_NAMESPACE), where this controller's ControllerStatus
   * lives; each Stage's status.controllerStatus points there. Default konfidence-system.
   */
  systemNamespace?: string;
  log?: LogFn;
  /**
   * Absent: standalone, always acts. Present: the watches run always, passes run only while
   * leader (leadership is checked right before each write), and becoming leader re-reconciles
   * every namespace (docs/ha.md).
   */
  leadership?: Leadership;
  /**
   * Sharded (KONFIDENCE_SHARD, worker/shards.ts): watches only in `namespaces` (none at first;
   * setNamespaces changes them) and passes only in the namespaces the shard serves (serve/drop).
   */
  sharded?: boolean;
  /** Sharded: the shard's name, which the Stages' status.controllerStatus names. */
  shard?: string;
  /** How often every namespace gets a pass whatever changed (default RESYNC_MS). */
  resyncMs?: number;
}
