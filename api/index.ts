/** The API of konfidence-activation: every kind, its zod schemas and types. */
export * from './group.js';
export * from './meta.js';
export * from './labels.js';
export * from './kind.js';
export * from './stage.js';
export * from './stage-version.js';
export * from './stage-version-usage.js';
export * from './vector-activation.js';
export * from './activation-execution.js';
export * from './activation-task-registration.js';
export * from './activation-execution-plan.js';
export * from './progression.js';
export * from './controller-status.js';
export * from './circuit-breaker.js';
export * from './sharding-config.js';
export * from './landscape.js';

import { ActivationExecution } from './activation-execution.js';
import { ActivationExecutionPlan } from './activation-execution-plan.js';
import { ActivationTaskRegistration } from './activation-task-registration.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { ControllerStatus } from './controller-status.js';
import { Landscape } from './landscape.js';
import { ShardingConfig } from './sharding-config.js';
import type { KindDefinition } from './kind.js';
import { Stage } from './stage.js';
import { StageVersion } from './stage-version.js';
import { StageVersionUsage } from './stage-version-usage.js';
import { VectorActivation } from './vector-activation.js';

/** Every custom resource kind, in the order their CRDs are written and installed. */
export const allKinds: readonly KindDefinition[] = [
  VectorActivation,
  ActivationExecution,
  ActivationTaskRegistration,
  ActivationExecutionPlan,
  StageVersionUsage,
  Stage,
  StageVersion,
  ControllerStatus,
  ShardingConfig,
  CircuitBreaker,
  Landscape,
];
export * from './crd.js';
export * from './conditions.js';
export * from './admission.js';
