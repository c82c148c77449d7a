/**
 * The samples of a Prometheus text exposition (a /metrics page), as the benchmarks read the
 * apiserver's, Temporal's and our roles' counters: comments and blank lines left out, labels as an
 * object, the value a number.
 */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function* metricSamples(text: string): Generator<MetricSample> {
  for (const line of text.split('\n')) {
    const sample = SAMPLE.exec(line);
    if (!sample) continue;
    const labels = Object.fromEntries([...(sample[2] ?? '').matchAll(LABEL)].map((m) => [m[1]!, m[2]!]));
    yield { name: sample[1]!, labels, value: Number(sample[3]) };
  }
}
