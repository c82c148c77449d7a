/**
 * An analysis' measurement (Prometheus) with, beside it, a read of the activation's Stage: a
 * measurement wakes the run, and a Stage deleted meanwhile is found then. One local activity, so
 * that a long analysis adds one history event a measurement, not two.
 */
import type { QueryResult } from '../decisions/analysis.js';
import type { CoreParts } from './parts.js';

/** The Stage the activation validated, by uid. */
export interface StageRef {
  namespace: string;
  stage: string;
  uid: string;
}

/** What was measured, and, when the Stage is gone or going, why (decisions/activation.ts stageLoss). */
export type Measurement = QueryResult & { stageLost?: string };

type MeasureParts = Pick<CoreParts, 'measure' | 'checkStage'>;

export function measureActivities(parts: MeasureParts) {
  return {
    async measure(address: string | undefined, query: string, stage?: StageRef): Promise<Measurement> {
      const [result, lost] = await Promise.all([
        parts.measure(address, query),
        stage ? parts.checkStage(stage.namespace, stage.stage, stage.uid) : undefined,
      ]);
      return lost ? { ...result, stageLost: lost.message } : result;
    },
  };
}
