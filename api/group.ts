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

/**
 * Kept on a VectorActivation while its run may change routes: a deletion then waits until the run
 * has put back what it changed (onFailure Revert) and let the Stage go, and its executions, whose
 * records say what to put back, stay until then.
 */
export const FINALIZER_CLOSE_OUT = 'konfidence.cloud/activation-close-out';
/** Set on a StageVersion while an activation uses it (value: namespace/name of the activation). */
export const ANNOTATION_ACTIVATED_BY = 'konfidence.cloud/activated-by';
/** Finalizer that keeps a StageVersion while any StageVersionUsage references it (ADR-0013). */
export const FINALIZER_IN_USE = 'konfidence.cloud/in-use-protection';
/** Set on the StageVersion that a Stage's active usage names (value: the Stage): it cannot be deleted. */
export const ANNOTATION_SERVING = 'konfidence.cloud/serving-stage';
/**
 * Set by a switch on the StageVersion it moved all the traffic off (value: when, ISO time): it keeps
 * its serving mark while it drains (the Stage's drainSeconds), which the Stage controller then lets
 * go even where it cannot read the routes (decisions/stage.ts servingMarks).
 */
export const ANNOTATION_DRAIN_SINCE = 'konfidence.cloud/drain-since';
