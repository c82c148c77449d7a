/** What an analysis decides (decisions/analysis.ts): the query as sent, a measurement's verdict, a run's verdict, Prometheus' answers. No servers. */
import {
  analysisQuery,
  measured,
  measurementVerdict,
  parseCondition,
  renderQuery,
  resultOf,
  startRun,
  stopped,
  type AnalysisRules,
  type Measured,
  type QueryResult,
} from '../../decisions/analysis.js';

const rules = (over: Partial<AnalysisRules> = {}): AnalysisRules => ({
  name: 'errors',
  query: 'q',
  intervalSeconds: 10,
  count: 3,
  failureLimit: 0,
  inconclusiveLimit: 0,
  consecutiveErrorLimit: 2,
  noData: 'Inconclusive',
  successCondition: 'result < 0.05',
  ...over,
});

describe('renderQuery: the placeholders a query may use', () => {
  it.each([
    [
      'rate(errors{namespace="{{namespace}}",version="{{stageVersion}}"}[1m])',
      'rate(errors{namespace="dev",version="shop-2"}[1m])',
    ],
    ['{{ stage }} {{previousStageVersion}} {{activation}}', 'shop shop-1 to-2'],
    ['{{unknown}} stays', '{{unknown}} stays'],
  ])('%s', (query, sent) => {
    expect(
      renderQuery(query, {
        namespace: 'dev',
        stage: 'shop',
        stageVersion: 'shop-2',
        previousStageVersion: 'shop-1',
        activation: 'to-2',
      }),
    ).toBe(sent);
  });
});

describe("analysisQuery: its own query filled in, or a built-in measurement of the new version's backend", () => {
  const vars = { namespace: 'dev', stage: 'shop', stageVersion: 'shop-2', activation: 'to-2' };
  const success = { provider: 'traefik', metric: 'request-success-rate', windowSeconds: 30 } as const;
  it.each([
    [
      'a query of its own',
      { name: 'a', query: 'up{namespace="{{namespace}}"}' },
      vars,
      { query: 'up{namespace="dev"}' },
    ],
    [
      'the success rate of the backend at its port',
      { name: 'a', dataPlane: success },
      { ...vars, backend: { service: 'shop-v2', port: 8080 } },
      {
        query:
          '1 - (sum(rate(traefik_service_requests_total{service=~"dev-shop-v2-http-8080@kubernetesgateway",code=~"5.."}[30s])) or vector(0)) / sum(rate(traefik_service_requests_total{service=~"dev-shop-v2-http-8080@kubernetesgateway"}[30s]))',
      },
    ],
    [
      'the p99 latency, at any port of the Service when the StageVersion names none',
      { name: 'a', dataPlane: { ...success, metric: 'request-duration-p99', windowSeconds: 60 } },
      { ...vars, backend: { service: 'shop-v2' } },
      {
        query:
          'histogram_quantile(0.99, sum by (le) (rate(traefik_service_request_duration_seconds_bucket{service=~"dev-shop-v2-http-[0-9]+@kubernetesgateway"}[60s])))',
      },
    ],
    [
      'a built-in without a backend to select: an error that says what to set',
      { name: 'a', dataPlane: success },
      vars,
      {
        error:
          "analysis a measures request-success-rate of StageVersion shop-2's requests, but it names no Service: set its spec.backend.service",
      },
    ],
  ] as const)('%s', (_what, a, v, expected) => {
    expect(analysisQuery(a, v)).toEqual(expected);
  });
});

describe('parseCondition: one comparison, or two joined by &&', () => {
  it.each([
    ['result < 0.05', [{ op: '<', bound: 0.05 }]],
    [
      'result>=0.9 && result <= 1',
      [
        { op: '>=', bound: 0.9 },
        { op: '<=', bound: 1 },
      ],
    ],
    ['result != -1e-3', [{ op: '!=', bound: -0.001 }]],
  ])('%s', (text, parsed) => expect(parseCondition(text)).toEqual(parsed));
  it('refuses anything else, saying what it expects', () =>
    expect(() => parseCondition('len(result) > 0')).toThrow(/expected e.g. "result < 0.05"/));
});

describe('measurementVerdict', () => {
  it.each<[string, Partial<AnalysisRules>, QueryResult, string]>([
    ['success holds', { successCondition: 'result < 0.05' }, { value: 0.01 }, 'Successful'],
    ['success does not hold, no failure condition', { successCondition: 'result < 0.05' }, { value: 0.2 }, 'Failed'],
    ['failure holds', { successCondition: undefined, failureCondition: 'result > 0.1' }, { value: 0.2 }, 'Failed'],
    [
      'failure does not hold, no success condition',
      { successCondition: undefined, failureCondition: 'result > 0.1' },
      { value: 0.05 },
      'Successful',
    ],
    [
      'both given, neither holds',
      { successCondition: 'result < 0.05', failureCondition: 'result > 0.1' },
      { value: 0.07 },
      'Inconclusive',
    ],
    [
      'both given, failure wins when both hold',
      { successCondition: 'result < 1', failureCondition: 'result > 0.1' },
      { value: 0.5 },
      'Failed',
    ],
    ['no data, rule Inconclusive', { noData: 'Inconclusive' }, { noData: 'empty' }, 'Inconclusive'],
    ['no data, rule Failed', { noData: 'Failed' }, { noData: 'empty' }, 'Failed'],
    ['a query error', {}, { error: 'unreachable' }, 'Error'],
  ])('%s → %s', (_n, over, result, verdict) => expect(measurementVerdict(rules(over), result)).toBe(verdict));
});

const at = (verdict: Measured['verdict'], value?: number): Measured => ({
  time: '2026-01-01T00:00:00Z',
  verdict,
  ...(value !== undefined ? { value } : {}),
});

/** The phase after each of `verdicts` in turn. */
function phases(
  a: AnalysisRules,
  verdicts: Measured['verdict'][],
  background = false,
  permanentLast = false,
): string[] {
  let run = startRun(a, a.query!, 0, background);
  return verdicts.map(
    (v, i) => (run = measured(a, run, at(v, 0.01), permanentLast && i === verdicts.length - 1)).phase,
  );
}

describe("measured: the verdict of a run (Argo Rollouts' limits)", () => {
  it.each<[string, Partial<AnalysisRules>, Measured['verdict'][], string[]]>([
    ['count reached, all passed', {}, ['Successful', 'Successful', 'Successful'], ['Running', 'Running', 'Successful']],
    ['one failure past failureLimit 0 fails at once', {}, ['Successful', 'Failed'], ['Running', 'Failed']],
    [
      'failureLimit 1 tolerates one',
      { failureLimit: 1 },
      ['Failed', 'Successful', 'Failed'],
      ['Running', 'Running', 'Failed'],
    ],
    [
      'failureLimit 1, one failure in count passes',
      { failureLimit: 1 },
      ['Failed', 'Successful', 'Successful'],
      ['Running', 'Running', 'Successful'],
    ],
    ['inconclusive past its limit', {}, ['Inconclusive'], ['Inconclusive']],
    [
      'inconclusiveLimit 1 tolerates one',
      { inconclusiveLimit: 1 },
      ['Inconclusive', 'Successful', 'Successful'],
      ['Running', 'Running', 'Successful'],
    ],
    [
      'errors in a row past consecutiveErrorLimit 2',
      { count: 10 },
      ['Error', 'Error', 'Error'],
      ['Running', 'Running', 'Error'],
    ],
    [
      'a success between errors resets the row',
      { count: 10 },
      ['Error', 'Error', 'Successful', 'Error', 'Error'],
      ['Running', 'Running', 'Running', 'Running', 'Running'],
    ],
  ])('%s', (_n, over, verdicts, expected) => expect(phases(rules(over), verdicts)).toEqual(expected));

  it('an error no retry can fix ends the run at once', () =>
    expect(phases(rules({ count: 10 }), ['Error'], false, true)).toEqual(['Error']));
  it('a background run has no count: it runs until stopped, then it passed', () => {
    const a = rules({ count: 1 });
    let run = startRun(a, a.query!, 2, true);
    for (let i = 0; i < 5; i++) run = measured(a, run, at('Successful', 0.01));
    expect(run.phase).toBe('Running');
    expect(stopped(run).phase).toBe('Successful');
  });
  it('a failed run says the query, the values and the condition', () => {
    const a = rules();
    let run = startRun(a, 'sum(rate(errors[1m]))', 0, false);
    run = measured(a, run, at('Successful', 0.01));
    run = measured(a, run, at('Failed', 0.4));
    expect(run.message).toBe(
      'analysis errors (success: result < 0.05) measured 0.01, 0.4; query: sum(rate(errors[1m])): 1 failed measurements, more than the failureLimit 0',
    );
  });
  it('keeps the latest ten measurements', () => {
    const a = rules({ count: 50 });
    let run = startRun(a, a.query!, 0, false);
    for (let i = 0; i < 12; i++) run = measured(a, run, at('Successful', i));
    expect(run.measurements.map((m) => m.value)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(run.successful).toBe(12);
  });
});

describe('resultOf: what Prometheus answered', () => {
  const ok = (resultType: string, result: unknown) => ({ status: 'success', data: { resultType, result } });
  it.each<[string, number, unknown, QueryResult]>([
    ['a scalar', 200, ok('scalar', [1, '0.25']), { value: 0.25 }],
    ['one series', 200, ok('vector', [{ metric: {}, value: [1, '3'] }]), { value: 3 }],
    ['an empty vector is no data', 200, ok('vector', []), { noData: 'the query returned no series' }],
    [
      'NaN is no data',
      200,
      ok('vector', [{ metric: {}, value: [1, 'NaN'] }]),
      { noData: 'the query returned NaN (no data, or a division by zero)' },
    ],
    ['+Inf is a value', 200, ok('scalar', [1, '+Inf']), { value: Infinity }],
    [
      'two series must be aggregated',
      200,
      ok('vector', [{ value: [1, '1'] }, { value: [1, '2'] }]),
      { error: 'the query returned 2 series; aggregate it to one value (sum, max, avg)', permanent: true },
    ],
    [
      'a range is refused',
      200,
      ok('matrix', []),
      { error: 'the query returned a matrix; an instant query must return a scalar or one series', permanent: true },
    ],
    [
      'bad_data is permanent',
      400,
      { status: 'error', errorType: 'bad_data', error: 'parse error' },
      { error: 'Prometheus refused the query: bad_data: parse error', permanent: true },
    ],
    ['a 503 is not', 503, undefined, { error: 'Prometheus refused the query: HTTP 503', permanent: false }],
  ])('%s', (_n, status, body, result) => expect(resultOf(status, body)).toEqual(result));
});
