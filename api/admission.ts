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
        resourceRules: [
          { apiGroups: [GROUP], apiVersions: ['*'], operations: ['UPDATE', 'DELETE'], resources: ['stageversions'] },
        ],
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

export const ACTIVATION_REQUESTS_POLICY = 'konfidence-activation-requests';

/** Requests whose annotation says who asked (shared/activation.ts ANNOTATION_APPROVE and the two after it). */
const AUTHORED = ['konfidence.cloud/approve', 'konfidence.cloud/promote', 'konfidence.cloud/abort'];

const annotated = (o: string, key: string) =>
  `${o} != null && has(${o}.metadata.annotations) && '${key}' in ${o}.metadata.annotations`;

/**
 * A progressive activation's approve, promote and abort annotations say truly who asked: the
 * apiserver refuses a new value that does not start with the writer's user name (followed by the
 * end or a space). The watcher records that name in status.requests, the workflow in its history.
 */
export const activationRequestAuthorship = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: ACTIVATION_REQUESTS_POLICY, labels: { 'app.kubernetes.io/part-of': 'konfidence-activation' } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [GROUP],
            apiVersions: ['*'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['vectoractivations'],
          },
        ],
      },
      variables: [{ name: 'user', expression: 'request.userInfo.username' }],
      validations: AUTHORED.map((key) => {
        const value = `object.metadata.annotations['${key}']`;
        const unchanged = `(${annotated('oldObject', key)} && oldObject.metadata.annotations['${key}'] == ${value})`;
        const signed = `(!variables.user.contains(' ') && (${value} == variables.user || ${value}.startsWith(variables.user + ' ')))`;
        return {
          expression: `!(${annotated('object', key)}) || ${unchanged} || ${signed}`,
          messageExpression:
            `variables.user.contains(' ') ? '${key} cannot say who you are (your user name has a space): ask with the Temporal Update instead' : ` +
            `'${key} must start with your user name, ' + variables.user + ', then a space and anything that makes the request new: ` +
            `kubectl annotate va ' + object.metadata.name + ' --overwrite ${key}=\"' + variables.user + ' 1\"'`,
          reason: 'Forbidden',
        };
      }),
    },
  },
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: ACTIVATION_REQUESTS_POLICY, labels: { 'app.kubernetes.io/part-of': 'konfidence-activation' } },
    spec: { policyName: ACTIVATION_REQUESTS_POLICY, validationActions: ['Deny'] },
  },
];
