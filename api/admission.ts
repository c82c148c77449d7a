/**
 * ADR-0012 requirement 4, enforced by the apiserver itself: while an activation uses a StageVersion
 * (the activation sets the konfidence.cloud/activated-by annotation and clears it at the end), its
 * spec cannot change and it cannot be deleted; the StageVersion that serves a Stage (annotation
 * konfidence.cloud/serving-stage, moved by the activation) cannot be deleted either, so every Stage
 * keeps one; deleting the namespace deletes them all. Shipped with the CRDs as a ValidatingAdmissionPolicy and its binding.
 */
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_SERVING, GROUP } from './group.js';

export const STAGEVERSION_POLICY = 'konfidence-stageversion-in-activation';

const has = (key: string) => `has(oldObject.metadata.annotations) && '${key}' in oldObject.metadata.annotations`;
const annotation = (key: string) => `oldObject.metadata.annotations['${key}']`;
/** Deleting a whole namespace takes its StageVersions with it: the guard would keep it Terminating. */
const namespaceGoing = `(namespaceObject != null && has(namespaceObject.metadata.deletionTimestamp))`;

export const stageVersionProtection = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: STAGEVERSION_POLICY, labels: { 'app.kubernetes.io/part-of': 'konfidence-activation' } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [{ apiGroups: [GROUP], apiVersions: ['*'], operations: ['UPDATE', 'DELETE'], resources: ['stageversions'] }],
      },
      validations: [
        {
          expression: `request.operation != 'UPDATE' || !(${has(ANNOTATION_ACTIVATED_BY)}) || object.spec == oldObject.spec`,
          messageExpression:
            `'StageVersion ' + oldObject.metadata.name + ' is in use by the activation ' + ${annotation(ANNOTATION_ACTIVATED_BY)} + ` +
            `': its spec cannot change until that activation ends'`,
          reason: 'Forbidden',
        },
        {
          expression: `request.operation != 'DELETE' || ${namespaceGoing} || !(${has(ANNOTATION_ACTIVATED_BY)})`,
          messageExpression:
            `'StageVersion ' + oldObject.metadata.name + ' is in use by the activation ' + ${annotation(ANNOTATION_ACTIVATED_BY)} + ` +
            `': it cannot be deleted until that activation ends'`,
          reason: 'Forbidden',
        },
        {
          expression: `request.operation != 'DELETE' || ${namespaceGoing} || !(${has(ANNOTATION_SERVING)})`,
          messageExpression:
            `'StageVersion ' + oldObject.metadata.name + ' serves the traffic of Stage ' + ${annotation(ANNOTATION_SERVING)} + ` +
            `': activate another StageVersion before deleting it'`,
          reason: 'Forbidden',
        },
      ],
    },
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: STAGEVERSION_POLICY, labels: { 'app.kubernetes.io/part-of': 'konfidence-activation' } },
    spec: { policyName: STAGEVERSION_POLICY, validationActions: ['Deny'] },
  },
];
