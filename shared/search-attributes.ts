/**
 * Custom search attributes that make activations filterable in the Temporal UI, e.g.
 * `Stage = "dev" AND ActivationPhase = "InProgress"`. The local dev server registers them at start;
 * a production namespace needs them registered once (`temporal operator search-attribute create`).
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const STAGE = defineSearchAttributeKey('Stage', SearchAttributeType.KEYWORD);
export const STAGE_VERSION = defineSearchAttributeKey('StageVersion', SearchAttributeType.KEYWORD);
export const VECTOR = defineSearchAttributeKey('Vector', SearchAttributeType.KEYWORD);
// "Namespace" is reserved by Temporal itself; this is the Kubernetes namespace of the activation.
export const K8S_NAMESPACE = defineSearchAttributeKey('K8sNamespace', SearchAttributeType.KEYWORD);
export const ACTIVATION_PHASE = defineSearchAttributeKey('ActivationPhase', SearchAttributeType.KEYWORD);

export const searchAttributes = [STAGE, STAGE_VERSION, VECTOR, K8S_NAMESPACE, ACTIVATION_PHASE] as const;
