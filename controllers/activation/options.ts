/** How the activation controller (controller.ts) is set up: worker/main.ts's watcher role and worker/system.ts pass these. */
import type { Client } from '@temporalio/client';
import type { k8s } from '../../k8s/client.js';
import type { Leadership } from '../../k8s/leader-election.js';
import type { LogFn } from '../../telemetry/log.js';

export interface ActivationControllerOptions {
  kubeConfig: k8s.KubeConfig;
  client: Client;
  taskQueue: string;
  /** Namespaces to watch; default all. */
  namespaces?: string[];
  uiUrl?: string;
  queueSuffix?: string;
  /** How often unfinished activations' workflows are checked for having closed (default 30 s). */
  checkIntervalMs?: number;
  /** Passed to the workflows: how often a waiting activation asks its Stage's lock again. */
  lockAskAgainSeconds?: number;
  /** How long an activation waits for another holder's Stage Lease before it fails (default LEASE_WAIT_SECONDS, workflows/policies.ts). */
  leaseWaitSeconds?: number;
  systemNamespace?: string;
  log?: LogFn;
  /**
   * Absent: standalone, always acts. Present: the informers run always (warm caches) but it acts
   * only while leader, checks leadership right before each write, and on becoming leader decides
   * again for every cached object (docs/ha.md).
   */
  leadership?: Leadership;
  /** Sharded (KONFIDENCE_SHARD, worker/shards.ts): informers only in the shard's namespaces, acts only where it serves. */
  sharded?: boolean;
  /** At most this many Stages of one namespace have activations running (decisions/fair-share.ts); absent: no limit. */
  stagesPerNamespace?: number;
  /** How long a burst's newest waits for the rest of the burst at most (decisions/supersede.ts; default 250 ms). */
  burstSettleMs?: number;
  /** How long a Stage without a new activation ends that wait (decisions/supersede.ts; default 75 ms). */
  burstQuietMs?: number;
}
