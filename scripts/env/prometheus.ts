/**
 * Prometheus for the analyses of progressive activations: Debian's binary, run on loopback with a
 * one-second scrape, its targets read from files (file_sd): a test, or npm start's sample, drops a
 * JSON file naming its /metrics endpoints into the targets folder and Prometheus scrapes it within
 * a second or two, without a reload.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaries, stateDir } from './paths.js';
import { startDetached } from './process.js';

const dir = join(stateDir, 'prometheus');
/** Where scrape targets go: one JSON file each (file_sd_configs). */
export const prometheusTargetsDir = join(dir, 'targets');

export function startPrometheus(port: number): number {
  mkdirSync(prometheusTargetsDir, { recursive: true });
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: konfidence-targets',
      '    file_sd_configs:',
      `      - files: ['${join(prometheusTargetsDir, '*.json')}']`,
      '        refresh_interval: 1s',
      '',
    ].join('\n'),
  );
  return startDetached('prometheus', binaries.prometheus, [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    // A day of samples is all a local control plane needs.
    '--storage.tsdb.retention.time=1d',
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
}

export async function prometheusReady(port: number): Promise<boolean> {
  return (await fetch(`http://127.0.0.1:${port}/-/ready`)).ok;
}

/**
 * Tells Prometheus to scrape `targets` (host:port, each serving /metrics) under the name `id`;
 * returns how to stop scraping them.
 */
export function scrape(id: string, targets: string[], labels: Record<string, string> = {}): () => void {
  mkdirSync(prometheusTargetsDir, { recursive: true });
  const file = join(prometheusTargetsDir, `${id.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
  writeFileSync(file, JSON.stringify([{ targets, labels }]));
  return () => rmSync(file, { force: true });
}
