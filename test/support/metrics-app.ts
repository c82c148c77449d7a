/**
 * The test app's metrics: one small HTTP server that Prometheus scrapes (scripts/env/prometheus.ts
 * `scrape`), serving each StageVersion's error ratio as `konfidence_test_error_ratio` with its
 * namespace, Stage and StageVersion as labels. A test sets each version healthy, failing or silent
 * (no series at all: the query returns no data), and waits until Prometheus has seen it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { scrape } from '../../scripts/env/prometheus.js';
import { pollUntil } from '../../scripts/env/process.js';

export type Health = 'healthy' | 'failing' | 'silent';
const RATIO: Record<Exclude<Health, 'silent'>, number> = { healthy: 0.01, failing: 0.5 };

/** The query an analysis asks about the version being activated. */
export const ERROR_RATIO_QUERY =
  'max(konfidence_test_error_ratio{namespace="{{namespace}}",stage="{{stage}}",stage_version="{{stageVersion}}"})';

export interface MetricsApp {
  set(namespace: string, stage: string, stageVersion: string, health: Health): void;
  /** Waits until Prometheus answers `value` (undefined: no data) for the version. */
  seen(prometheusUrl: string, namespace: string, stage: string, stageVersion: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startMetricsApp(id: string): Promise<MetricsApp> {
  const versions = new Map<string, { labels: string; health: Health }>();
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    const lines = ['# TYPE konfidence_test_error_ratio gauge'];
    for (const { labels, health } of versions.values())
      if (health !== 'silent') lines.push(`konfidence_test_error_ratio{${labels}} ${RATIO[health]}`);
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(`${lines.join('\n')}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const stopScraping = scrape(id, [`127.0.0.1:${(server.address() as AddressInfo).port}`]);
  return {
    set(namespace, stage, stageVersion, health) {
      versions.set(`${namespace}/${stageVersion}`, {
        labels: `namespace="${namespace}",stage="${stage}",stage_version="${stageVersion}"`,
        health,
      });
    },
    async seen(prometheusUrl, namespace, stage, stageVersion) {
      const health = versions.get(`${namespace}/${stageVersion}`)?.health ?? 'silent';
      const query = `max(konfidence_test_error_ratio{namespace="${namespace}",stage="${stage}",stage_version="${stageVersion}"})`;
      await pollUntil(
        async () => {
          const body = (await (
            await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(query)}`)
          ).json()) as { data?: { result?: { value: [number, string] }[] } };
          const value = body.data?.result?.[0]?.value[1];
          return health === 'silent' ? value === undefined : value !== undefined && Number(value) === RATIO[health];
        },
        30_000,
        `Prometheus to see ${stageVersion} ${health}`,
        250,
      );
    },
    async stop() {
      stopScraping();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
