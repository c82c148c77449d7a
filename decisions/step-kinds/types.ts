/**
 * What a kind of progression step is, as pure rules: how the plan's spec says it, the gate it
 * waits at and until when, and that gate's rules (its status reason, its Event, whether a person's
 * approve ends it). One file per kind holds its rules; index.ts lists them in the one table every
 * reader consults.
 */
import type { ProgressionStep } from '../../api/progression.js';
import type { GateType } from '../../api/progression-defaults.js';

/** What one step does, by kind. */
export type StepKind =
  | { kind: 'weight'; weight: number }
  | { kind: 'pause'; seconds: number }
  | { kind: 'approval'; seconds: number; onTimeout: 'Abort' | 'Continue' }
  | { kind: 'analysis'; analysis: string }
  | { kind: 'webhook'; url: string; timeoutSeconds: number; retries: number };

export type StepKindName = StepKind['kind'];

export interface Gate {
  type: GateType;
  /** Workflow time (ms) the gate ends by itself: a timed pause ends, an approval times out. */
  until?: number;
  /** What a time-out does: go on (a timed pause; an approval with onTimeout Continue) or abort. */
  onTimeout: 'next' | 'abort';
  message: string;
}

/** The rules of one kind of step. */
export interface StepKindRules<K extends StepKindName = StepKindName> {
  kind: K;
  /** The step as this kind, when the plan's step is one (the schema allows exactly one kind a step). */
  of(step: ProgressionStep): Extract<StepKind, { kind: K }> | undefined;
  /**
   * The gate a step of this kind waits at for a person or a time, from `now` (workflow time, ms);
   * absent for a kind whose handler decides by itself (a weight, an analysis, an HTTP check).
   */
  gate?(step: Extract<StepKind, { kind: K }>, now: number, label: string): Gate;
}

/** The rules of a gate a progression waits at. */
export interface GateTypeRules {
  /** The status reason while the activation waits there. */
  reason: string;
  /** The reason of the Event that says the wait began. */
  event: string;
  /** Whether a person's approve ends the wait (else the gate decides by itself; promote skips it). */
  approvable: boolean;
  /** What the activation runs there, as a refused approve says it ("an analysis"). */
  runs?: string;
}

export type GateRulesTable = Record<GateType, GateTypeRules>;
