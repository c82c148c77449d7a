/**
 * The activation's Kubernetes bookkeeping (its status, its executions, the Stage's Lease, marks and
 * usages) as local activities: short, retried by the policy in workflows/policies.ts, and run on
 * the core worker beside the workflow.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import type { ActivationActivities } from '../../activities/core.js';
import type { LetGoActivities } from '../../activities/finish-and-let-go.js';
import { KUBERNETES_BOOKKEEPING } from '../policies.js';

export const bookkeeping = proxyLocalActivities<ActivationActivities & LetGoActivities>(KUBERNETES_BOOKKEEPING);
