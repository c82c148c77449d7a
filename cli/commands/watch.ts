/**
 * `watch [STAGE]`: streams phase changes of VectorActivations from a Kubernetes watch (list, then
 * watch from the list's resourceVersion; a watch the apiserver ends or expires is listed and watched
 * again, so nothing is missed and nothing printed twice). Runs until SIGINT/SIGTERM, --timeout, or
 * until the activation named by --until-final is final.
 */
import { GROUP, VERSION } from '../../api/group.js';
import type { VectorActivationResource } from '../../api/vector-activation.js';
import { parseDuration } from '../args.js';
import { stringOption, type Command } from '../command.js';
import type { Context } from '../context.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { waitOutcome } from '../outcome.js';
import { phaseEvent, renderPhaseEvent, type Seen } from '../views.js';

/** Consecutive failed (re)starts of the watch, one second apart, before giving up (exit 4 when unreachable). */
const RESTARTS_TOLERATED = 10;
const RESTART_DELAY_MS = 1_000;

export const watch: Command = {
  name: 'watch',
  summary: 'stream phase changes of VectorActivations until interrupted',
  description: [
    'Prints a line for every VectorActivation of the namespace (of STAGE only, if given) as it is now, then',
    'one per change of phase, reason or attempt, until Ctrl-C (exit 0). -o json prints one JSON object per',
    'line. --until-final NAME stops when that VectorActivation is final, with the exit code of',
    'activate --wait (0: its StageVersion serves the traffic, 1: it does not).',
  ].join('\n'),
  positionals: [{ name: 'STAGE', required: false, description: 'only the activations of this Stage' }],
  options: [
    {
      name: 'until-final',
      value: 'NAME',
      description: 'stop when this VectorActivation reaches a final phase; exit code as activate --wait',
    },
    { name: 'timeout', value: 'DURATION', description: 'stop after this long (exit 0; with --until-final: exit 5)' },
  ],
  examples: ['watch shop -n team-a', 'watch --until-final shop-7-3f9a2c -o json'],
  async validate(args) {
    const timeout = stringOption(args, 'timeout');
    if (timeout !== undefined) parseDuration('timeout', timeout);
  },
  async run(ctx, args) {
    const stage = args.positionals[0];
    const until = stringOption(args, 'until-final');
    const timeout = stringOption(args, 'timeout');
    const timeoutMs = timeout === undefined ? undefined : parseDuration('timeout', timeout);
    if (stage && !(await ctx.stage(stage)))
      ctx.io.err(`note: Stage ${ctx.namespace}/${stage} does not exist (yet); watching for its activations`);
    // Loaded when run, not for --help: the Kubernetes client and zod take seconds to load.
    const [{ k8s }, { vectorActivationResource }] = await Promise.all([
      import('../../k8s/client.js'),
      import('../../api/vector-activation.js'),
    ]);
    return follow(ctx, k8s, vectorActivationResource, stage, until, timeoutMs);
  },
};

type K8s = typeof import('../../k8s/client.js').k8s;
type Schema = typeof import('../../api/vector-activation.js').vectorActivationResource;

function follow(
  ctx: Context,
  k8s: K8s,
  schema: Schema,
  stage: string | undefined,
  until: string | undefined,
  timeoutMs: number | undefined,
): Promise<ExitCode> {
  const path = `/apis/${GROUP}/${VERSION}/namespaces/${ctx.namespace}/vectoractivations`;
  const api = ctx.kc.makeApiClient(k8s.CustomObjectsApi);
  const seen: Seen = new Map();
  /** The last version of every object delivered, by uid: one gone between two watches is reported Deleted on the re-list. */
  const known = new Map<string, VectorActivationResource>();
  return new Promise<ExitCode>((resolve, reject) => {
    let stopped = false;
    let current: AbortController | undefined;
    let failures = 0;
    /** Each (re)start is a generation; callbacks of an abandoned watch are ignored. */
    let generation = 0;
    let timer: NodeJS.Timeout | undefined;
    const end = (finish: () => void) => {
      if (stopped) return;
      stopped = true;
      current?.abort();
      clearTimeout(timer);
      process.off('SIGINT', interrupted);
      process.off('SIGTERM', interrupted);
      finish();
    };
    const interrupted = () => end(() => resolve(EXIT.ok));
    process.on('SIGINT', interrupted);
    process.on('SIGTERM', interrupted);
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        if (until)
          ctx.io.err(`VectorActivation ${ctx.namespace}/${until} is not final after ${Math.round(timeoutMs / 1000)}s`);
        end(() => resolve(until ? EXIT.timeout : EXIT.ok));
      }, timeoutMs);
    }

    const handle = (type: string, o: unknown) => {
      if (stopped) return;
      const parsed = schema.safeParse(o);
      if (!parsed.success) return; // not ours to judge here; status and history report such objects
      const a: VectorActivationResource = parsed.data;
      if (type === 'DELETED') known.delete(a.metadata.uid!);
      else known.set(a.metadata.uid!, a);
      if (!stage || a.spec.stage === stage) {
        const event = phaseEvent(seen, type, a, new Date());
        if (event) ctx.io.out(ctx.json ? JSON.stringify(event) : renderPhaseEvent(event));
      }
      if (until && a.metadata.name === until) {
        if (type === 'DELETED') {
          ctx.io.err(`VectorActivation ${ctx.namespace}/${until} was deleted before it was final`);
          return end(() => resolve(EXIT.failed));
        }
        const outcome = waitOutcome(a.status?.phase, a.status?.reason);
        if (outcome.done) {
          if (!ctx.json) ctx.io.out(`${until}: ${outcome.verdict}`);
          end(() => resolve(outcome.code));
        }
      }
    };

    const restart = (err: unknown) => {
      if (stopped) return;
      if (++failures > RESTARTS_TOLERATED) return end(() => reject(err));
      setTimeout(() => void start(), RESTART_DELAY_MS);
    };

    const start = async () => {
      if (stopped) return;
      const mine = ++generation;
      const live = () => mine === generation && !stopped;
      try {
        const list = (await api.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: ctx.namespace,
          plural: 'vectoractivations',
        })) as { metadata?: { resourceVersion?: string }; items: unknown[] };
        const listed = new Set(list.items.map((o) => (o as { metadata?: { uid?: string } }).metadata?.uid));
        for (const [uid, gone] of known) if (!listed.has(uid)) handle('DELETED', gone);
        for (const o of list.items) handle('ADDED', o);
        if (!live()) return;
        current = await new k8s.Watch(ctx.kc).watch(
          path,
          { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
          (type, o) => {
            if (!live() || type === 'BOOKMARK') return;
            // ERROR: typically 410 Gone (the resourceVersion is too old): list and watch again.
            if (type === 'ERROR') {
              generation++;
              current?.abort();
              return restart(new Error(`watch error: ${JSON.stringify(o)}`));
            }
            failures = 0;
            handle(type, o);
          },
          (err) => {
            if (!live()) return;
            generation++;
            if (err) restart(err);
            else void start(); // the apiserver ended the watch (its timeout): list and watch again
          },
        );
      } catch (err) {
        if (live()) restart(err);
      }
    };
    void start();
  });
}
