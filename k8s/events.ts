/**
 * Kubernetes Events (events.k8s.io/v1) on the objects the system acts on, so `kubectl describe`
 * tells what happened, in order. Aggregated like client-go's events broadcaster: saying the same
 * thing again about the same object within SERIES_WINDOW_MS bumps the `series` (count and
 * lastObservedTime) of the Event that says it instead of adding a second one, and `kubectl
 * describe` shows "(x3 over 5m)". Like client-go's, the recorder remembers the Events it wrote
 * (SeriesCache): a repeat it remembers is one patch, with no look-up. A repeat it does not (an
 * activity retried on another replica after a crash, a restarted component) is looked for with a
 * field-selected list, unless the caller says it happens once. Unlike client-go's, the same thing
 * means the same note too: an Event says which version a Stage serves, and a count on an Event
 * that names another version would mislead. Best effort: an Event that cannot be written after a
 * few attempts is logged, never fatal.
 *
 * Why names carry the time and not a hash of the content: `kubectl describe` sorts Events by
 * deprecatedLastTimestamp, which events.k8s.io/v1 refuses to set, so it shows them in the
 * apiserver's list order, which is name order. Time-ordered names make that the story's order;
 * the repeat is found by a field-selected list (regarding uid and reason) instead of a 409.
 */
import { API_VERSION, GROUP } from '../api/group.js';
import type { EventSpec } from '../decisions/events.js';
import { apiMessage, apiStatus, k8s } from './client.js';
import { CustomObjects } from './custom-objects.js';
import { JsonRequests, MERGE_PATCH, pathOf } from './json-requests.js';

/** An Event as the apiserver answers it: the fields read here (its times are strings in JSON). */
export interface EventAsSent {
  metadata?: { name?: string; resourceVersion?: string };
  series?: { count?: number };
  type?: string;
  reason?: string;
  action?: string;
  note?: string;
  regarding?: { kind?: string; name?: string; uid?: string };
}

export interface Regarding {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** Without it `kubectl describe` cannot find the Event; the recorder reads it for the project's kinds. */
  uid?: string;
}

export type EventType = 'Normal' | 'Warning';

export const REPORTING_CONTROLLER = 'konfidence.cloud/activation';

// The apiserver's limits for events.k8s.io/v1 (pkg/apis/core/validation/events.go).
const NOTE_BYTES = 1024;
const REASON_CHARS = 128;
const INSTANCE_CHARS = 128;
const ATTEMPTS = 5;
const MAX_NAME = 253;

/** Cuts a note to the apiserver's 1 KiB (bytes, not characters), saying so. */
export function clipNote(note: string): string {
  if (Buffer.byteLength(note) <= NOTE_BYTES) return note;
  const marker = '… (clipped)';
  let cut = note.slice(0, NOTE_BYTES - marker.length);
  while (Buffer.byteLength(cut + marker) > NOTE_BYTES) cut = cut.slice(0, -1);
  return cut + marker;
}

/** A reason or action as the apiserver takes it: a CamelCase word of at most 128 characters. */
export function eventWord(word: string): string {
  return word.replace(/[^A-Za-z0-9]/g, '').slice(0, REASON_CHARS) || 'Unknown';
}

/**
 * The Event's name: the regarding object's name (cut so the whole fits 253 characters), a dot, and
 * the time in microseconds as 16 hex digits, so name order is time order. A valid object name for
 * every valid regarding name: a cut DNS subdomain stays one once trailing '-' and '.' are dropped.
 */
export function eventName(regardingName: string, micros: number): string {
  const time = Math.floor(micros).toString(16).padStart(16, '0');
  return `${regardingName.slice(0, MAX_NAME - time.length - 1).replace(/[-.]+$/, '')}.${time}`;
}

/** Whether an existing Event says what we are about to say (client-go's isomorphic events, plus the note). */
export function saysTheSame(
  existing: Pick<EventAsSent, 'type' | 'reason' | 'action' | 'note' | 'regarding'>,
  type: string,
  reason: string,
  action: string,
  note: string,
  regarding: Regarding,
): boolean {
  const r = existing.regarding;
  return (
    existing.type === type &&
    existing.reason === reason &&
    existing.action === action &&
    existing.note === note &&
    r?.kind === regarding.kind &&
    r?.name === regarding.name &&
    (r?.uid ?? '') === (regarding.uid ?? '')
  );
}

/** How long a repeat counts on the Event before it (client-go's events/v1 recorder: 6 minutes). */
export const SERIES_WINDOW_MS = 6 * 60_000;
/** Events remembered at most; the oldest go first (client-go's cache is bounded too). */
const SERIES_REMEMBERED = 4096;

/** An Event this process wrote or counted: where it is, its count, and when it was last said. */
interface Remembered {
  name: string;
  namespace: string;
  count: number;
  resourceVersion: string | undefined;
  saidAt: number;
}

/**
 * The Events a recorder wrote, by what they say (type, reason, action, note and the regarding
 * object's kind, name and uid, as saysTheSame compares them), for SERIES_WINDOW_MS after each was
 * last said. A Map keeps insertion order: re-inserting on every use makes the first entry the
 * least recently said.
 */
export class SeriesCache {
  private readonly entries = new Map<string, Remembered>();

  constructor(private readonly now: () => number = Date.now) {}

  static key(type: string, reason: string, action: string, note: string, regarding: Regarding): string {
    return JSON.stringify([
      type,
      reason,
      action,
      note,
      regarding.kind,
      regarding.namespace,
      regarding.name,
      regarding.uid ?? '',
    ]);
  }

  /** The Event that says this, when it was said within the window. */
  find(key: string): Remembered | undefined {
    const found = this.entries.get(key);
    if (!found || this.now() - found.saidAt <= SERIES_WINDOW_MS) return found;
    this.entries.delete(key);
    return undefined;
  }

  remember(key: string, event: Omit<Remembered, 'saidAt'>): void {
    this.entries.delete(key);
    this.entries.set(key, { ...event, saidAt: this.now() });
    if (this.entries.size > SERIES_REMEMBERED) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

let lastMicros = 0;
/**
 * Now in microseconds, strictly increasing within the process: names and eventTime order Events,
 * and two Events of one transition often fall into the same millisecond.
 */
export function nowMicros(nowMs = Date.now()): number {
  lastMicros = Math.max(nowMs * 1000, lastMicros + 1);
  return lastMicros;
}

/** metav1.MicroTime as the apiserver writes it (RFC 3339, six fractional digits, UTC). */
export function microTime(micros: number): string {
  const iso = new Date(Math.floor(micros / 1000)).toISOString();
  return `${iso.slice(0, -1)}${String(micros % 1000).padStart(3, '0')}Z`;
}

const transient = (err: unknown) => {
  // A deposed leader's fenced client refuses every write (k8s/leader-election.ts): no retry helps.
  if (err instanceof Error && err.name === 'NotLeaderError') return false;
  const code = apiStatus(err);
  return code === undefined || code === 429 || code >= 500;
};

/** The Events this process wrote: every recorder of the process shares them, as one client-go broadcaster would. */
const processSeries = new SeriesCache();

/** `remembered`: the Events written before (default this process's); a test gives a fresh one to stand for another process. */
export function eventRecorder(
  kc: k8s.KubeConfig,
  log: (message: string) => void = (m) => console.warn(m),
  remembered: SeriesCache = processSeries,
) {
  const requests = new JsonRequests(kc);
  const objects = new CustomObjects(kc);
  const eventsOf = (namespace: string, name?: string) =>
    pathOf('apis', 'events.k8s.io', 'v1', 'namespaces', namespace, 'events', ...(name ? [name] : []));
  const instance = (process.env.HOSTNAME ?? 'local').slice(0, INSTANCE_CHARS);

  /** The regarding reference with its uid; for the project's kinds read from the object when missing. */
  async function complete(regarding: Regarding): Promise<Regarding> {
    if (regarding.uid || !regarding.apiVersion.startsWith(`${GROUP}/`)) return regarding;
    const o = await objects.get(regarding.kind, regarding.namespace, regarding.name);
    return o?.metadata.uid ? { ...regarding, uid: o.metadata.uid } : regarding;
  }

  /** Counts a repeat on the Event `existing` names; false when it changed meanwhile or is gone. */
  async function count(key: string, existing: Omit<Remembered, 'saidAt'>): Promise<boolean> {
    // series needs count ≥ 2 and lastObservedTime; everything else of an events.k8s.io/v1 Event is immutable.
    const series = { count: existing.count + 1, lastObservedTime: microTime(nowMicros()) };
    const body = { metadata: { resourceVersion: existing.resourceVersion }, series };
    try {
      const patched = await requests.send<EventAsSent>({
        method: 'PATCH',
        path: eventsOf(existing.namespace, existing.name),
        body: JSON.stringify(body),
        contentType: MERGE_PATCH,
      });
      remembered.remember(key, {
        ...existing,
        count: series.count,
        resourceVersion: patched.metadata?.resourceVersion,
      });
      return true;
    } catch (err) {
      // Counted by someone else meanwhile, or expired: what is remembered is stale.
      remembered.forget(key);
      if (apiStatus(err) === 409 || apiStatus(err) === 404) return false;
      throw err;
    }
  }

  /**
   * Bumps the series of the Event that says the same (remembered, or unless `once` looked for),
   * or creates one; true when done.
   */
  async function countOrCreate(
    regarding: Regarding,
    type: EventType,
    reason: string,
    action: string,
    note: string,
    once: boolean,
  ): Promise<boolean> {
    const { namespace } = regarding;
    const key = SeriesCache.key(type, reason, action, note, regarding);
    const known = remembered.find(key);
    if (known) return count(key, known);
    const selector = regarding.uid
      ? `regarding.uid=${regarding.uid}`
      : `regarding.kind=${regarding.kind},regarding.name=${regarding.name}`;
    const items = once
      ? []
      : (
          await requests.send<{ items: EventAsSent[] }>({
            method: 'GET',
            path: eventsOf(namespace),
            query: { fieldSelector: `${selector},reason=${reason}` },
          })
        ).items;
    const existing = items.find((e) => saysTheSame(e, type, reason, action, note, regarding));
    if (existing)
      return count(key, {
        name: existing.metadata!.name!,
        namespace,
        count: existing.series?.count ?? 1,
        resourceVersion: existing.metadata?.resourceVersion,
      });
    const micros = nowMicros();
    const name = eventName(regarding.name, micros);
    const created = await requests.send<EventAsSent>({
      method: 'POST',
      path: eventsOf(namespace),
      body: JSON.stringify({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name, namespace },
        // With its microseconds, as the apiserver keeps them.
        eventTime: microTime(micros),
        reportingController: REPORTING_CONTROLLER,
        reportingInstance: instance,
        action,
        reason,
        type,
        note,
        regarding: { ...regarding },
      }),
    });
    remembered.remember(key, { name, namespace, count: 1, resourceVersion: created.metadata?.resourceVersion });
    return true;
  }

  /**
   * `once`: the caller says this only once: it follows a write that made the transition, on a first
   * attempt (activities/transition-events.ts), or one conditional on a resourceVersion. Created
   * without the look-up for a repeat.
   */
  return async function record(
    regarding: Regarding,
    type: EventType,
    reason: string,
    note: string,
    action = reason,
    { once = false }: RecordOptions = {},
  ): Promise<void> {
    const r = eventWord(reason);
    const a = eventWord(action);
    const n = clipNote(note);
    let lastError: unknown;
    try {
      const ref = await complete(regarding);
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        try {
          if (await countOrCreate(ref, type, r, a, n, once)) return;
          lastError = new Error('the Event changed under us on every attempt');
        } catch (err) {
          lastError = err;
          if (!transient(err)) break;
          await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        }
      }
    } catch (err) {
      lastError = err;
    }
    log(
      `Event ${r} on ${regarding.kind} ${regarding.namespace}/${regarding.name} not written: ${apiMessage(lastError)}`,
    );
  };
}
export type EventRecorder = ReturnType<typeof eventRecorder>;
export interface RecordOptions {
  once?: boolean;
}

/**
 * Records what decisions/events.ts decided, one after the other (their names, hence kubectl's
 * order, follow). `uids` holds the uids known already (`Kind/name`); the others are read.
 */
export async function recordEvents(
  record: EventRecorder,
  namespace: string,
  events: readonly EventSpec[],
  uids: Record<string, string | undefined> = {},
  options: RecordOptions = {},
): Promise<void> {
  for (const e of events) {
    const uid = uids[`${e.kind}/${e.name}`];
    await record(
      { apiVersion: API_VERSION, kind: e.kind, namespace, name: e.name, ...(uid ? { uid } : {}) },
      e.type,
      e.reason,
      e.note,
      e.action,
      options,
    );
  }
}

/** Events waiting to be written in the background, at most this many (client-go's broadcaster drops past 1000 too). */
const MAX_QUEUED = 1000;
let queued = 0;
/** The last background write of each namespace: a namespace's Events are written in the order they were sent. */
const tails = new Map<string, Promise<void>>();
/** Events sent before a flush gave up (the process is stopping) are dropped: sends carry the epoch. */
let epoch = 0;

/**
 * recordEvents in the background, as client-go's recorder does: Events are best effort, and the
 * look-up and create of each (two round trips) must not sit on an activation's path between its
 * status writes. In order per namespace within this process (another process's Events of the
 * same object may land in between); a crash before they are written loses them, as it would lose
 * client-go's. Over MAX_QUEUED waiting, new ones are dropped and logged.
 */
export function sendEvents(
  record: EventRecorder,
  namespace: string,
  events: readonly EventSpec[],
  uids: Record<string, string | undefined> = {},
  log: (message: string) => void = (m) => console.warn(m),
  options: RecordOptions = {},
): void {
  if (events.length === 0) return;
  if (queued + events.length > MAX_QUEUED) {
    log(`${events.length} Event(s) in namespace ${namespace} dropped: ${queued} are waiting to be written`);
    return;
  }
  queued += events.length;
  const sentIn = epoch;
  const tail = (tails.get(namespace) ?? Promise.resolve())
    .then(() => (sentIn < epoch ? undefined : recordEvents(record, namespace, events, uids, options)))
    .catch(() => undefined) // record() logs its own failures
    .finally(() => {
      queued -= events.length;
      if (tails.get(namespace) === tail) tails.delete(namespace);
    });
  tails.set(namespace, tail);
}

/**
 * Waits until the Events sent so far are written, at most `timeoutMs`: before a process stops (an
 * elected one while it still leads, since its writes are fenced). Past the deadline what still
 * waits is dropped, so that nothing holds the process up: false then.
 */
export async function flushEvents(timeoutMs = 5_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  let written = true;
  while (tails.size > 0) {
    const pending = Promise.all([...tails.values()]).then(() => 'done' as const);
    if ((await Promise.race([pending, deadline.then(() => 'late' as const)])) === 'late') {
      epoch++;
      written = false;
      break;
    }
  }
  clearTimeout(timer);
  return written;
}
