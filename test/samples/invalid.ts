/**
 * Objects the apiserver must refuse, each with the field its message has to name: a user who makes
 * the mistake learns where it is. zod must refuse the same objects (see api-agreement.test.ts).
 */
import { variant, type Sample } from '../support/samples.js';

export interface InvalidCase {
  title: string;
  object: Sample;
  /** Field path the apiserver's message names. */
  field: string;
  /** Part of the message that says what is wrong. */
  says: string;
}

export const invalidCases: InvalidCase[] = [
  {
    title: 'a Landscape that allows no namespace',
    object: variant('Landscape', 'allows-none', (s) => {
      s.allowedNamespaces = [];
    }),
    field: 'spec.allowedNamespaces',
    says: 'should have at least 1 items',
  },
  {
    title: 'a Landscape that allows a name no namespace can have',
    object: variant('Landscape', 'bad-namespace', (s) => {
      s.allowedNamespaces = ['Team_A'];
    }),
    field: 'spec.allowedNamespaces[0]',
    says: 'should match',
  },
  {
    title: 'a Stage whose landscape is no DNS label',
    object: variant('Stage', 'bad-landscape', (s) => {
      s.landscape = 'EU West';
    }),
    field: 'spec.landscape',
    says: 'should match',
  },
  {
    title: 'a usage with both stageVersionRef and stageVersionSelector',
    object: variant('StageVersionUsage', 'both-ref-and-selector', (s) => {
      s.stageVersionSelector = { matchLabels: { 'konfidence.cloud/stage-name': 'dev' } };
    }),
    field: 'spec',
    says: 'exactly one of stageVersionRef or stageVersionSelector must be set',
  },
  {
    title: 'a usage with neither stageVersionRef nor stageVersionSelector',
    object: variant('StageVersionUsage', 'neither', (s) => {
      delete s.stageVersionRef;
    }),
    field: 'spec',
    says: 'exactly one of stageVersionRef or stageVersionSelector must be set',
  },
  {
    title: 'a usage whose selector has no labels',
    object: variant('StageVersionUsage', 'empty-selector', (s) => {
      delete s.stageVersionRef;
      s.stageVersionSelector = { matchLabels: {} };
    }),
    field: 'spec.stageVersionSelector.matchLabels',
    says: 'must name at least one label',
  },
  {
    title: "a usage selecting by ADR-0013's raw vector, which is no valid label value",
    object: variant('StageVersionUsage', 'raw-vector-label', (s) => {
      delete s.stageVersionRef;
      s.stageVersionSelector = {
        matchLabels: { 'konfidence.cloud/vector': 'common.konfidence.cloud/example/vector:0.0.1' },
      };
    }),
    field: 'spec.stageVersionSelector.matchLabels.konfidence.cloud/vector',
    says: 'should match',
  },
  {
    title: 'a usage selecting by a label key that is not one',
    object: variant('StageVersionUsage', 'bad-label-key', (s) => {
      delete s.stageVersionRef;
      s.stageVersionSelector = { matchLabels: { 'stage name': 'dev' } };
    }),
    field: 'spec.stageVersionSelector.matchLabels',
    says: 'keys must be label keys',
  },
  {
    title: 'a usage without a reason',
    object: variant('StageVersionUsage', 'no-reason', (s) => {
      delete s.reason;
    }),
    field: 'spec.reason',
    says: 'Required value',
  },
  {
    title: 'a plan with two steps of the same name',
    object: variant('ActivationExecutionPlan', 'duplicate-steps', (s) => {
      s.steps[1].name = s.steps[0].name;
    }),
    field: 'spec.steps',
    says: 'step names must be unique',
  },
  {
    title: 'a plan step without tasks',
    object: variant('ActivationExecutionPlan', 'empty-step', (s) => {
      s.steps[0].tasks = [];
    }),
    field: 'spec.steps[0].tasks',
    says: 'step step1 must list at least one task',
  },
  {
    title: 'a plan without steps',
    object: variant('ActivationExecutionPlan', 'no-steps', (s) => {
      s.steps = [];
    }),
    field: 'spec.steps',
    says: 'at least 1 items',
  },
  {
    title: 'a plan that runs one task in two steps',
    object: variant('ActivationExecutionPlan', 'task-twice', (s) => {
      s.steps[1].tasks = [...s.steps[0].tasks];
    }),
    field: 'spec.steps',
    says: 'a task may appear in only one step',
  },
  {
    title: 'a plan step listing a task twice',
    object: variant('ActivationExecutionPlan', 'task-twice-in-step', (s) => {
      s.steps[0].tasks = ['activationtask-1', 'activationtask-1'];
    }),
    field: 'spec.steps[0].tasks[1]',
    says: 'Duplicate value',
  },
  {
    title: 'a plan with an unknown failure policy',
    object: variant('ActivationExecutionPlan', 'bad-on-failure', (s) => {
      s.onFailure = 'Ignore';
    }),
    field: 'spec.onFailure',
    says: 'Unsupported value',
  },
  {
    title: 'an analysis with both a query and a built-in measurement',
    object: variant('ActivationExecutionPlan', 'query-and-data-plane', (s) => {
      s.steps = [{ name: 'routes', tasks: ['k8s-gateway'] }];
      s.progression = { steps: [{ setWeight: 10 }, { analysis: { name: 'both' } }] };
      s.analyses = [
        {
          name: 'both',
          prometheus: { query: 'up' },
          dataPlane: { metric: 'request-success-rate' },
          successCondition: 'result > 0.9',
        },
      ];
    }),
    field: 'spec.analyses[0]',
    says: 'analysis both measures either a prometheus.query or a dataPlane metric, exactly one',
  },
  {
    title: 'an analysis that measures nothing',
    object: variant('ActivationExecutionPlan', 'measures-nothing', (s) => {
      s.steps = [{ name: 'routes', tasks: ['k8s-gateway'] }];
      s.progression = { steps: [{ setWeight: 10 }, { analysis: { name: 'none' } }] };
      s.analyses = [
        { name: 'none', prometheus: { address: 'http://prometheus.test:9090' }, successCondition: 'result > 0.9' },
      ];
    }),
    field: 'spec.analyses[0]',
    says: 'analysis none measures either a prometheus.query or a dataPlane metric, exactly one',
  },
  {
    title: 'a registration with a zero timeout',
    object: variant('ActivationTaskRegistration', 'zero-timeout', (s) => {
      s.timeoutSeconds = 0;
    }),
    field: 'spec.timeoutSeconds',
    says: 'greater than or equal to 1',
  },
  {
    title: 'a registration whose type is not a DNS label',
    object: variant('ActivationTaskRegistration', 'bad-type', (s) => {
      s.type = 'GatewayAPI';
    }),
    field: 'spec.type',
    says: 'should match',
  },
  {
    title: 'a registration whose heartbeat timeout exceeds its timeout',
    object: variant('ActivationTaskRegistration', 'long-heartbeat', (s) => {
      s.timeoutSeconds = 10;
      s.heartbeatTimeoutSeconds = 20;
    }),
    field: 'spec.heartbeatTimeoutSeconds',
    says: 'must not exceed timeoutSeconds',
  },
  {
    title: 'a registration with an unknown executor mode',
    object: variant('ActivationTaskRegistration', 'bad-executor', (s) => {
      s.executor = 'Sidecar';
    }),
    field: 'spec.executor',
    says: 'Unsupported value',
  },
  {
    title: "a registration whose executor spec is a string (ADR-0012's placeholder)",
    object: variant('ActivationTaskRegistration', 'string-spec', (s) => {
      s.spec = '';
    }),
    field: 'spec.spec',
    says: 'must be of type object',
  },
  {
    title: 'a VectorActivation without a stageVersion',
    object: variant('VectorActivation', 'no-stage-version', (s) => {
      delete s.stageVersion;
    }),
    field: 'spec.stageVersion',
    says: 'Required value',
  },
  {
    title: 'a VectorActivation naming a Stage that cannot exist',
    object: variant('VectorActivation', 'bad-stage', (s) => {
      s.stage = 'Dev_Stage';
    }),
    field: 'spec.stage',
    says: 'should match',
  },
  {
    title: 'a Stage with an empty vector',
    object: variant('Stage', 'empty-vector', (s) => {
      s.vector = '';
    }),
    field: 'spec.vector',
    says: 'at least 1 chars',
  },
  {
    title: 'a StageVersion with revision 0',
    object: variant('StageVersion', 'revision-zero', (s) => {
      s.revision = 0;
    }),
    field: 'spec.revision',
    says: 'greater than or equal to 1',
  },
  {
    title: 'a StageVersion whose backend port is out of range',
    object: variant('StageVersion', 'bad-port', (s) => {
      s.backend = { service: 'shop', port: 70000 };
    }),
    field: 'spec.backend.port',
    says: 'less than or equal to 65535',
  },
  {
    title: 'an ActivationExecution with an unknown action',
    object: variant('ActivationExecution', 'bad-action', (s) => {
      s.action = 'Rollback';
    }),
    field: 'spec.action',
    says: 'Unsupported value',
  },
  {
    title: 'an ActivationExecution without a timeout',
    object: variant('ActivationExecution', 'no-timeout', (s) => {
      delete s.timeoutSeconds;
    }),
    field: 'spec.timeoutSeconds',
    says: 'Required value',
  },
  {
    title: 'a ControllerStatus for a role that does not run with leader election',
    object: variant('ControllerStatus', 'bad-role', (s) => {
      s.role = 'executor';
    }),
    field: 'spec.role',
    says: 'Unsupported value',
  },
  {
    title: 'a ControllerStatus without a role',
    object: variant('ControllerStatus', 'no-role', (s) => {
      delete s.role;
    }),
    field: 'spec.role',
    says: 'Required value',
  },
  {
    title: 'a ControllerStatus whose shard is not a DNS label',
    object: variant('ControllerStatus', 'bad-shard', (s) => {
      s.shard = 'EU_1';
    }),
    field: 'spec.shard',
    says: 'should match',
  },
];

export interface InvalidUpdate {
  title: string;
  kind: string;
  /** The sample changed (default: the kind's first in valid.yaml). */
  sample?: string;
  change: (spec: Record<string, any>) => void;
  field: string;
  says: string;
}

/** Changes to stored objects that transition rules refuse (zod has no old object to compare). */
export const invalidUpdates: InvalidUpdate[] = [
  {
    title: 'giving a Stage a landscape after its creation',
    kind: 'Stage',
    change: (s) => {
      s.landscape = 'us-east';
    },
    field: 'spec.landscape',
    says: 'spec.landscape is immutable',
  },
  {
    title: 'taking a Stage out of its landscape',
    kind: 'Stage',
    sample: 'prod',
    change: (s) => {
      delete s.landscape;
    },
    field: 'spec.landscape',
    says: 'spec.landscape is immutable',
  },
  {
    title: 'moving a Stage to another landscape',
    kind: 'Stage',
    sample: 'prod',
    change: (s) => {
      s.landscape = 'us-east';
    },
    field: 'spec.landscape',
    says: 'spec.landscape is immutable',
  },
  {
    title: "changing a VectorActivation's StageVersion",
    kind: 'VectorActivation',
    change: (s) => {
      s.stageVersion = 'dev-9';
    },
    field: 'spec',
    says: 'spec of a VectorActivation (create a new one to activate something else) is immutable',
  },
  {
    title: "changing a StageVersion's revision",
    kind: 'StageVersion',
    change: (s) => {
      s.revision = 99;
    },
    field: 'spec.revision',
    says: 'spec.revision is immutable',
  },
  {
    title: "changing an ActivationExecution's target",
    kind: 'ActivationExecution',
    change: (s) => {
      s.stageVersion = 'dev-9';
    },
    field: 'spec',
    says: 'spec of an ActivationExecution is immutable',
  },
  {
    title: "changing a ControllerStatus's role",
    kind: 'ControllerStatus',
    change: (s) => {
      s.role = 'stage-controller';
    },
    field: 'spec',
    says: 'spec of a ControllerStatus is immutable',
  },
];
