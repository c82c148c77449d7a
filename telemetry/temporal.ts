/**
 * The Temporal SDK's side of telemetry: its logs (TypeScript side, workflow and activity context
 * loggers, and Core's native logs forwarded) go through the project's logger, and its runtime
 * metrics are served by the SDK's Prometheus exporter on a loopback port that /metrics reads and
 * appends to the project's own (telemetry/metrics.ts). One scrape target per process.
 */
import type { LogLevel, LogMetadata, Logger as SdkLogger } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import { freePort } from '../shared/free-port.js';
import type { Level, LogFields, Logger } from './log.js';

/** The SDK's metadata fields that only add noise to a record (an opaque token, internal ids). */
const DROPPED = new Set(['taskToken', 'sdkComponent', 'target', 'spanContexts']);

/**
 * Fields a record about a workflow can carry without asking anyone: the ids say which activation or
 * Stage (formats of shared/activation.ts and stage-lock/contract.ts: vectoractivation/NS/NAME/UID, stage-lock/NS/STAGE).
 */
export function fieldsOfWorkflowId(workflowId: unknown): LogFields {
  if (typeof workflowId !== 'string') return {};
  const [kind, namespace, name] = workflowId.split('/');
  if (kind === 'vectoractivation' && namespace && name) return { namespace, activation: name };
  if (kind === 'stage-lock' && namespace && name) return { namespace, stage: name };
  return {};
}

/** SDK metadata to our fields: the Temporal namespace is renamed (ours means Kubernetes namespace). */
export function sdkFields(meta: LogMetadata | undefined): LogFields {
  if (!meta) return {};
  const fields: LogFields = {};
  for (const [key, value] of Object.entries(meta)) {
    if (DROPPED.has(key) || value === undefined) continue;
    fields[key === 'namespace' ? 'temporalNamespace' : key] = typeof value === 'bigint' ? value.toString() : value;
  }
  const component = typeof meta.sdkComponent === 'string' ? `temporal-${meta.sdkComponent}` : 'temporal';
  return { component, ...fields, ...fieldsOfWorkflowId(meta.workflowId) };
}

/** The SDK's Logger interface on top of ours. */
export function sdkLogger(base: Logger): SdkLogger {
  const log = (level: LogLevel, message: string, meta?: LogMetadata) =>
    base.log(level.toLowerCase() as Level, message, sdkFields(meta));
  return {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
  };
}

export interface TemporalTelemetry {
  /** Where the SDK's exporter serves its text (read by /metrics). */
  sdkMetricsUrl: string;
}

/**
 * Installs the SDK's Runtime with our logger and its Prometheus exporter; once per process, before
 * any connection or worker is made. `metricsAddress` (host:port) pins the exporter; default a free
 * loopback port, since /metrics serves its text anyway.
 */
export async function installTemporalRuntime(base: Logger, metricsAddress?: string): Promise<TemporalTelemetry> {
  const bindAddress = metricsAddress ?? `127.0.0.1:${await freePort()}`;
  const level = base.level.toUpperCase() as LogLevel;
  Runtime.install({
    logger: sdkLogger(base),
    telemetryOptions: {
      // Core's own logs at our level; those of the libraries it uses only when they are errors.
      logging: { filter: { core: level, other: 'ERROR' }, forward: {} },
      metrics: { prometheus: { bindAddress } },
    },
  });
  const [host, port] = splitHostPort(bindAddress);
  return { sdkMetricsUrl: `http://${host === '0.0.0.0' || host === '' ? '127.0.0.1' : host}:${port}/metrics` };
}

function splitHostPort(address: string): [string, string] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i), address.slice(i + 1)];
}

/**
 * The SDK exporter's text, or a comment saying why not: a scrape must not fail because the SDK's
 * side did not answer (the project's metrics are still worth having).
 */
export async function fetchSdkMetrics(url: string, timeoutMs = 2_000): Promise<string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return `# Temporal SDK metrics unavailable: ${url} answered ${res.status}\n`;
    return await res.text();
  } catch (err) {
    return `# Temporal SDK metrics unavailable: ${url}: ${(err as Error).message}\n`;
  }
}
