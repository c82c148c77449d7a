/**
 * A watch for tests and benchmarks that does not end quietly. A bare `k8s.Watch` that the
 * apiserver refuses (429 Too Many Requests on a loaded machine: it happened in CI) or closes calls
 * its done callback once and sees nothing more, and an assertion on what it saw then fails far
 * from the cause. This one starts again from the last resourceVersion it received, so no change
 * is missed, and gives up only after `attempts` tries in a row, saying why in `ended`.
 */
import { k8s } from '../../k8s/client.js';

export interface ResumingWatch {
  stop(): void;
  /** Why it gave up, if it did. */
  readonly ended: string | undefined;
}

export async function resumingWatch(
  kc: k8s.KubeConfig,
  path: string,
  onEvent: (type: string, o: any) => void,
  { attempts = 50, delayMs = 200 } = {},
): Promise<ResumingWatch> {
  let last: string | undefined;
  let stopped = false;
  let ended: string | undefined;
  let current: AbortController | undefined;
  let failures = 0;

  const start = async (): Promise<void> => {
    let restarted = false;
    const restart = (err: unknown) => {
      if (stopped || restarted) return;
      restarted = true;
      if (++failures >= attempts) {
        ended = `the watch of ${path} ended and could not be started again: ${String(err ?? 'closed')}`;
        return;
      }
      setTimeout(() => void start(), delayMs);
    };
    if (stopped) return;
    try {
      const watch = await new k8s.Watch(kc).watch(
        path,
        last ? { resourceVersion: last } : {},
        (type, o: any) => {
          // A Status, not an object: the apiserver ends the watch after it. 410 Gone: the version we
          // resume from is compacted away; start from now (what came between is lost, and said).
          if (type === 'ERROR') {
            if (o?.code === 410) last = undefined;
            restart(`${o?.code ?? ''} ${o?.message ?? 'an error event'}`);
            return;
          }
          failures = 0;
          last = o?.metadata?.resourceVersion ?? last;
          onEvent(type, o);
        },
        restart,
      );
      if (stopped)
        watch.abort(); // stopped while it was starting
      else current = watch;
    } catch (err) {
      restart(err);
    }
  };
  await start();
  return {
    stop: () => {
      stopped = true;
      current?.abort();
    },
    get ended() {
      return ended;
    },
  };
}
