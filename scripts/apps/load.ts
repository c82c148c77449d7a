/**
 * A steady load on the local gateway, and the record of every request it sent: when it was sent
 * (ms on this process's monotonic clock, performance.now()), its status, its latency, which version
 * answered (the app's `x-konfidence-version`), whether that version was told to fail it
 * (`x-konfidence-injected`), and whether it went over a kept-alive connection or a fresh one. The
 * evidence the data-plane tests and benchmarks judge from (./judge.ts). Loopback only: the gateway's
 * URL is checked to be on 127.0.0.0/8.
 */
import { Agent, request } from 'node:http';

export interface Sent {
  /** When it was sent, performance.now() ms. */
  at: number;
  /** The HTTP status; 0 when no answer came (refused, reset, timed out). */
  status: number;
  latencyMs: number;
  /** The version that answered; undefined when no app did (the gateway itself answered, or nobody). */
  version: string | undefined;
  /** The app failed it because it was told to. */
  injected: boolean;
  connection: 'kept' | 'fresh';
  /** Why no answer came. */
  error?: string;
}

export interface LoadOptions {
  /** The gateway, e.g. http://127.0.0.1:18000 (KONFIDENCE_GATEWAY_URL). */
  gatewayUrl: string;
  /** The route's hostname (the Host header). */
  host: string;
  path?: string;
  /** Requests per second (default 200). */
  rate?: number;
  /** The share sent over fresh connections (default 0.5). */
  freshShare?: number;
  /** A request with no answer after this long counts as failed (default 5 s). */
  timeoutMs?: number;
  /** Keep only about the latest this many requests (a load that runs for hours); default: all. */
  keepLast?: number;
}

export interface Load {
  readonly sent: readonly Sent[];
  /** Stops sending; resolves once every request sent has its answer (or timed out). */
  stop(): Promise<readonly Sent[]>;
}

/**
 * One request through the gateway to `host` (node:http: fetch would replace the Host header), on a
 * fresh connection: its status and the version that answered.
 */
export function requestOnce(
  gatewayUrl: string,
  host: string,
  path = '/',
  timeoutMs = 5_000,
): Promise<{ status: number; version: string | undefined }> {
  const url = new URL(path, gatewayUrl);
  return new Promise((resolve) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: { host, connection: 'close' },
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        const version = res.headers['x-konfidence-version'];
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, version: typeof version === 'string' ? version : undefined }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, version: undefined }));
    req.end();
  });
}

/** The tick of the sender: at each, it sends what the rate owes since the start. */
const TICK_MS = 5;

export function startLoad(o: LoadOptions): Load {
  const url = new URL(o.path ?? '/', o.gatewayUrl);
  if (!url.hostname.startsWith('127.'))
    throw new Error(`the load goes to loopback only; ${o.gatewayUrl} is not on 127.0.0.0/8`);
  const rate = o.rate ?? 200;
  const freshShare = o.freshShare ?? 0.5;
  const timeoutMs = o.timeoutMs ?? 5_000;
  const kept = new Agent({ keepAlive: true, maxSockets: 16 });
  const sent: Sent[] = [];
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  let count = 0;
  let freshCount = 0;

  const one = (connection: Sent['connection']) => {
    const at = performance.now();
    const p = new Promise<void>((resolve) => {
      const done = (s: Omit<Sent, 'at' | 'latencyMs' | 'connection'>) => {
        sent.push({ at, latencyMs: performance.now() - at, connection, ...s });
        if (o.keepLast && sent.length > 2 * o.keepLast) sent.splice(0, sent.length - o.keepLast);
        resolve();
      };
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          headers: { host: o.host, ...(connection === 'fresh' ? { connection: 'close' } : {}) },
          agent: connection === 'kept' ? kept : false,
          timeout: timeoutMs,
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const version = res.headers['x-konfidence-version'];
            done({
              status: res.statusCode ?? 0,
              version: typeof version === 'string' ? version : undefined,
              injected: res.headers['x-konfidence-injected'] === '1',
            });
          });
          res.on('error', (err) => done({ status: 0, version: undefined, injected: false, error: err.message }));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (err) => done({ status: 0, version: undefined, injected: false, error: err.message }));
      req.end();
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  const timer = setInterval(() => {
    const owed = Math.floor(((performance.now() - started) * rate) / 1000) - count;
    for (let i = 0; i < owed; i++) {
      count++;
      // Fresh connections spread evenly among the kept-alive ones.
      const fresh = freshCount < freshShare * count;
      if (fresh) freshCount++;
      one(fresh ? 'fresh' : 'kept');
    }
  }, TICK_MS);

  return {
    sent,
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight);
      kept.destroy();
      return sent;
    },
  };
}
