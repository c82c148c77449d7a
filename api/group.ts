/** API group, version and the well-known label and annotation keys of konfidence-activation. */
export const GROUP = 'landscape.konfidence.cloud';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Namespace that holds ActivationTaskRegistrations and ActivationExecutionPlans (ADR-0012). */
export const DEFAULT_SYSTEM_NAMESPACE = 'konfidence-system';

/** Label keys from ADR-0013's selector example; StageVersions carry both. */
export const LABEL_STAGE_NAME = 'konfidence.cloud/stage-name';
export const LABEL_VECTOR = 'konfidence.cloud/vector';
/** Which of the well-known usages a StageVersionUsage is: target, active or activation. */
export const LABEL_USAGE = 'konfidence.cloud/usage';
/** ActivationExecution labels: the registration it runs and the activation it belongs to. */
export const LABEL_REGISTRATION = 'konfidence.cloud/registration';
export const LABEL_VECTOR_ACTIVATION = 'konfidence.cloud/vector-activation';
