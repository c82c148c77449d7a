/**
 * Health endpoints of every process (kubelet probes):
 * - GET /healthz: the process is alive and its event loop responsive (a loop blocked for longer
 *   than `maxEventLoopLagMs` answers 503; a loop blocked for good does not answer at all, which a
 *   probe counts as failure too).
 * - GET /readyz: every readiness check passes (Temporal reachable, apiserver reachable, caches
 *   synced). A standby replica is ready: leadership is not a readiness condition.
 * Both answer JSON: { ok, checks: { name: "ok" | message } }.
 * - GET /metrics (when `metrics` is given): Prometheus text, the one scrape target of the process
 *   (docs/observability.md).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { componentLogger } from '../telemetry/log.js';
import { within } from '../shared/within.js';

export interface ReadinessCheck {
  name: string;
  /** Resolves when ready; throws (or rejects) with the reason otherwise. */
  check(): Promise<unknown> | unknown;
}

export interface HealthServerOptions {
  /** 0 picks a free port (tests read it from `port` or from the log line). */
  port: number;
  host?: string;
  checks: ReadinessCheck[];
  /** Per check (default 2 s). */
  checkTimeoutMs?: number;
  maxEventLoopLagMs?: number;
  log?: (message: string) => void;
  /** The text /metrics serves, and its content type. */
  metrics?: () => Promise<{ contentType: string; text: string }>;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

const TICK_MS = 500;

/** Runs the checks; the map says "ok" or why not. */
export async function runChecks(
  checks: ReadinessCheck[],
  timeoutMs = 2_000,
): Promise<{ ok: boolean; checks: Record<string, string> }> {
  const results = await Promise.all(
    checks.map(async (c) => {
      try {
        await within(
          Promise.resolve().then(() => c.check()),
          timeoutMs,
          () => {
            throw new Error(`no answer within ${timeoutMs} ms`);
          },
        );
        return [c.name, 'ok'] as const;
      } catch (err) {
        return [c.name, (err as Error)?.message ?? String(err)] as const;
      }
    }),
  );
  return { ok: results.every(([, r]) => r === 'ok'), checks: Object.fromEntries(results) };
}

export async function startHealthServer(o: HealthServerOptions): Promise<HealthServer> {
  const log = o.log ?? componentLogger('health').fn();
  const maxLag = o.maxEventLoopLagMs ?? 10_000;
  let lastTick = performance.now();
  let lag = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    lag = Math.max(0, now - lastTick - TICK_MS);
    lastTick = now;
  }, TICK_MS);
  ticker.unref();

  const server: Server = createServer((req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, { ok: false });
    if (path === '/healthz' || path === '/livez') {
      const ok = lag <= maxLag;
      return reply(ok ? 200 : 503, {
        ok,
        checks: { eventLoop: ok ? 'ok' : `event loop lagged ${Math.round(lag)} ms` },
      });
    }
    if (path === '/metrics' && o.metrics) {
      o.metrics().then(
        ({ contentType, text }) => {
          res.writeHead(200, { 'content-type': contentType });
          res.end(text);
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`metrics failed: ${(err as Error)?.message ?? err}\n`);
        },
      );
      return;
    }
    if (path === '/readyz') {
      void runChecks(o.checks, o.checkTimeoutMs).then(
        (r) => reply(r.ok ? 200 : 503, r),
        (err: unknown) => reply(503, { ok: false, checks: { readyz: String(err) } }),
      );
      return;
    }
    reply(404, { ok: false });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  log(`health server listening on port ${port} (/healthz, /readyz${o.metrics ? ', /metrics' : ''})`);
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(ticker);
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
