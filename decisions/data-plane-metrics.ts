/**
 * Built-in measurements of the new version's requests as a gateway counts them (an analysis'
 * `dataPlane`), as Flagger's built-in checks are: the PromQL is written here, once per gateway, and
 * filled in with the StageVersion's backend, so a plan names a metric instead of a query. Pure:
 * table-tested in test/unit/analysis-decisions.test.ts, run against Traefik in test/data-plane.test.ts.
 */
import type { DataPlaneMetric, DataPlaneProvider } from '../api/progression-defaults.js';

export interface DataPlaneMeasurement {
  provider: DataPlaneProvider;
  metric: DataPlaneMetric;
  windowSeconds: number;
}

/** The Service the gateway sends the new version's requests to: its namespace, name and port (when known). */
export interface MeasuredBackend {
  namespace: string;
  service: string;
  port?: number;
}

/** How one gateway's metrics name a backend, and what its counters and histograms are called. */
interface GatewayMetrics {
  /** A label matcher that selects the backend's series, and only them. */
  selector(b: MeasuredBackend): string;
  requests: string;
  durationBuckets: string;
}

const GATEWAYS: Record<DataPlaneProvider, GatewayMetrics> = {
  /**
   * Traefik's Gateway API provider names a backend's service `<namespace>-<service>-http-<port>`
   * (with the provider's suffix); without a known port, any port of that Service. DNS labels hold
   * no character a regex treats specially.
   */
  traefik: {
    selector: (b) => `service=~"${b.namespace}-${b.service}-http-${b.port ?? '[0-9]+'}@kubernetesgateway"`,
    requests: 'traefik_service_requests_total',
    durationBuckets: 'traefik_service_request_duration_seconds_bucket',
  },
};

/**
 * The instant query of a built-in measurement. The success rate counts 5xx answers against all
 * (no 5xx series is no failure, `or vector(0)`); no requests in the window is no data (0/0), so
 * the analysis' noData rule decides, never a made-up 1.
 */
export function dataPlaneQuery(m: DataPlaneMeasurement, b: MeasuredBackend): string {
  const g = GATEWAYS[m.provider];
  const sel = g.selector(b);
  const window = `[${m.windowSeconds}s]`;
  switch (m.metric) {
    case 'request-success-rate':
      return `1 - (sum(rate(${g.requests}{${sel},code=~"5.."}${window})) or vector(0)) / sum(rate(${g.requests}{${sel}}${window}))`;
    case 'request-duration-p99':
      return `histogram_quantile(0.99, sum by (le) (rate(${g.durationBuckets}{${sel}}${window})))`;
  }
}

/** Requests per second the gateway sent the backend over the last `windowSeconds` (what `konfidence status` shows). */
export function requestRateQuery(provider: DataPlaneProvider, b: MeasuredBackend, windowSeconds: number): string {
  const g = GATEWAYS[provider];
  return `sum(rate(${g.requests}{${g.selector(b)}}[${windowSeconds}s]))`;
}
