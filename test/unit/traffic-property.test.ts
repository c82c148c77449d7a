/**
 * The traffic rules without servers, over a long seeded random sequence: a model Stage with two
 * managed rules, activated, failed under Stop and Revert, retried and edited by a person, where
 * every change goes through the pure functions the executors and the workflow use (assignments,
 * records and what a retry keeps of them, the revert order) and the Stage controller's plan
 * decides the protection. Replay a failure with KONFIDENCE_TRAFFIC_SEED.
 */
import { ANNOTATION_SERVING, FINALIZER_IN_USE, type StageVersionResource } from '../../api/index.js';
import type { RuleRecord } from '../../api/activation-execution.js';
import { decideNamespace, type Observed } from '../../decisions/stage.js';
import {
  applyAssignment,
  inheritedRecord,
  percentOf,
  restoreOrder,
  type TrafficAssignment,
} from '../../decisions/traffic.js';
import type { StepProgress } from '../../decisions/activation.js';
import { seededRandom } from '../support/random.js';

const OPERATIONS = 1000;
const seed = Number(process.env.KONFIDENCE_TRAFFIC_SEED ?? 5);
const RULES = ['gateway', 'mesh'] as const;
const route = (i: number) => ({ group: 'test', kind: 'Route', namespace: 'ns', name: RULES[i]! });
const recordOf = (i: number, weights: TrafficAssignment): RuleRecord => ({
  route: route(i),
  index: 0,
  entries: [],
  traffic: { ...weights },
});

interface Task {
  rule?: number;
  execution?: string;
  record?: RuleRecord;
  assignment?: TrafficAssignment;
  phase: 'Pending' | 'Succeeded' | 'Error';
}
interface Activation {
  name: string;
  target: number;
  weight: number;
  onFailure: 'Stop' | 'Revert';
  /** The step that fails (a check), or none. */
  failAt?: number;
  attempt: number;
  tasks: Task[];
  phase?: string;
}

it(`keeps every rule at 100 %, reverts exactly and protects every version with a share through ${OPERATIONS} operations (seed ${seed})`, () => {
  const rnd = seededRandom(seed);
  let rules: TrafficAssignment[] = [{ v1: 100 }, { v1: 100 }];
  let active = 1;
  let latest = 1;
  const activations: Activation[] = [];
  const name = (r: number) => `v${r}`;
  const where = (i: number, what: string) => `seed ${seed}, operation ${i} (${what})`;

  /** One attempt, as the workflow runs it from the truth; the executors as the model of their rule. */
  function run(va: Activation): void {
    if (va.target < active || (va.target === active && va.attempt === 1)) {
      va.phase = 'Skipped';
      return;
    }
    const previous = va.target === active ? undefined : name(active);
    const steps = va.failAt === undefined ? [0, 1] : [0, 1].flatMap((r) => (r === va.failAt ? [r, -1] : [r]));
    const earlier = va.tasks;
    va.tasks = [];
    for (const [i, rule] of steps.entries()) {
      if (rule < 0) {
        va.tasks.push({ phase: 'Error', execution: `${va.name}-${i}-check-r${va.attempt}` });
        if (va.onFailure === 'Revert') {
          const progress: StepProgress[] = va.tasks.map((t, j) => ({
            name: `s${j}`,
            phase: t.phase === 'Error' ? 'Failed' : 'Succeeded',
            tasks: [{ registration: `r${j}`, phase: t.phase, ...(t.execution ? { execution: t.execution } : {}) }],
          }));
          for (const { step } of restoreOrder(progress, va.tasks.length - 1)) {
            const t = va.tasks[step]!;
            if (t.record && t.rule !== undefined) rules[t.rule] = { ...t.record.traffic };
          }
        }
        va.phase = 'Failed';
        return;
      }
      const assignment = applyAssignment(name(va.target), previous, va.weight);
      const before = earlier.find((t) => t.rule === rule && t.record);
      const [record] = inheritedRecord(
        [recordOf(rule, rules[rule]!)],
        before ? { record: [before.record!], assignment: before.assignment! } : undefined,
      );
      rules[rule] = Object.fromEntries(Object.entries(assignment).filter(([, w]) => w > 0));
      va.tasks.push({
        rule,
        execution: `${va.name}-${i}-r${va.attempt}`,
        record: record!,
        assignment,
        phase: 'Succeeded',
      });
    }
    active = va.target;
    va.phase = 'Succeeded';
  }

  for (let i = 0; i < OPERATIONS; i++) {
    const op = rnd.pick(['activate', 'activate', 'retry', 'edit'] as const);
    const before = rules.map((r) => ({ ...r }));
    if (op === 'activate') {
      const va: Activation = {
        name: `va${i}`,
        target: ++latest,
        weight: rnd.pick([0, 10, 50, 100]),
        onFailure: rnd.pick(['Stop', 'Revert'] as const),
        attempt: 1,
        tasks: [],
      };
      if (rnd.int(2)) va.failAt = rnd.int(2);
      activations.push(va);
      const activeBefore = active;
      run(va);
      if (va.phase === 'Failed' && va.onFailure === 'Revert')
        expect({ at: where(i, op), rules }).toEqual({ at: where(i, op), rules: before });
      if (va.phase === 'Succeeded') {
        // Every rule holds exactly the assignment, whatever it held before.
        const wanted = Object.fromEntries(
          Object.entries(applyAssignment(name(va.target), name(activeBefore), va.weight)).filter(([, w]) => w > 0),
        );
        expect({ at: where(i, op), rules }).toEqual({ at: where(i, op), rules: [wanted, wanted] });
      }
    } else if (op === 'retry') {
      const failed = activations.filter((a) => a.phase === 'Failed');
      if (!failed.length) continue;
      const va = rnd.pick(failed);
      const firstRecords = va.tasks.filter((t) => t.record).map((t) => ({ rule: t.rule!, weights: t.record!.traffic }));
      va.attempt++;
      if (rnd.int(3) === 0) delete va.failAt; // the cause was mended
      run(va);
      if (va.phase === 'Failed' && va.onFailure === 'Revert') {
        // Every rule is back as it was before this attempt, or, where nobody moved it since the
        // earlier attempt, as it was before the activation: never on what the attempt assigned.
        for (const [r, weights] of rules.entries()) {
          const earlier = firstRecords.find((x) => x.rule === r)?.weights;
          expect({
            at: where(i, `retry of ${va.name}`),
            rule: r,
            ok:
              JSON.stringify(weights) === JSON.stringify(before[r]) ||
              JSON.stringify(weights) === JSON.stringify(earlier),
          }).toMatchObject({ ok: true });
        }
      }
    } else {
      // A person sends one rule to the active version alone.
      rules[rnd.int(2)] = { [name(active)]: 100 };
    }

    for (const [r, weights] of rules.entries())
      expect({ at: where(i, op), rule: r, sum: Object.values(weights).reduce((a, b) => a + b, 0) }).toMatchObject({
        sum: 100,
      });
    // The Stage controller's plan on this state: every version with a share is marked and kept.
    const stageVersions: StageVersionResource[] = Array.from({ length: latest }, (_, k) => ({
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'StageVersion',
      metadata: {
        name: name(k + 1),
        namespace: 'ns',
        uid: `u${k + 1}`,
        finalizers: [FINALIZER_IN_USE],
        ...(k + 1 === active ? { annotations: { [ANNOTATION_SERVING]: 'shop' } } : {}),
      },
      spec: { stage: 'shop', vector: `v:${k + 1}`, revision: k + 1 },
    }));
    const observed: Observed = {
      namespace: 'ns',
      stages: [
        {
          apiVersion: 'landscape.konfidence.cloud/v1alpha1',
          kind: 'Stage',
          metadata: { name: 'shop', namespace: 'ns', uid: 'st' },
          spec: { vector: `v:${latest}`, stageVersionHistoryLimit: 0, drainSeconds: 0 },
        },
      ],
      stageVersions,
      usages: [],
      activations: [],
      traffic: new Map([
        ['shop', { rules: rules.map((w, r) => ({ route: route(r), rule: 0, weights: percentOf(w) })), complete: true }],
      ]),
    };
    const plan = decideNamespace(observed, new Date(0));
    const serving = new Set(rules.flatMap((w) => Object.entries(w).flatMap(([k, v]) => (v > 0 ? [k] : []))));
    for (const sv of serving) {
      expect({ at: where(i, op), deleted: plan.deletes.some((d) => d.name === sv) }).toEqual({
        at: where(i, op),
        deleted: false,
      });
      const marked =
        sv === name(active) ||
        plan.metadata.some((m) => m.name === sv && m.metadata.annotations?.[ANNOTATION_SERVING] === 'shop');
      expect({ at: where(i, op), sv, marked }).toMatchObject({ marked: true });
    }
  }
});
