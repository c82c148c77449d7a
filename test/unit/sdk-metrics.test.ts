/**
 * bench/sdk-metrics.ts: the core worker's workflow tasks, local activities and cache hits per
 * activation, read from the Temporal SDK's Prometheus text as a role's /metrics serves it (the
 * samples below are lines of that text, other series and comments among them), and the parser of
 * that text the benchmarks share (bench/prometheus-text.ts).
 */
import { metricSamples } from '../../bench/prometheus-text.js';
import { countsPerActivation, describeCounts, sdkCounts } from '../../bench/sdk-metrics.js';

const labels = (type: string) =>
  `namespace="konfidence-test",service_name="temporal-core-sdk",task_queue="konfidence-core-tp",${type}`;

function exposition(o: {
  activationTasks: number;
  lockTasks: number;
  takeStage: number;
  hits: number;
  misses: number;
}) {
  return [
    '# HELP temporal_workflow_task_execution_latency Histogram of workflow task execution latencies',
    '# TYPE temporal_workflow_task_execution_latency histogram',
    `temporal_workflow_task_execution_latency_bucket{${labels('workflow_type="vectorActivation"')},le="1"} 3`,
    `temporal_workflow_task_execution_latency_count{${labels('workflow_type="vectorActivation"')}} ${o.activationTasks}`,
    `temporal_workflow_task_execution_latency_count{${labels('workflow_type="stageLock"')}} ${o.lockTasks}`,
    `temporal_workflow_task_execution_latency_sum{${labels('workflow_type="stageLock"')}} 999`,
    `temporal_local_activity_execution_latency_count{${labels('workflow_type="vectorActivation",activity_type="takeStage"')}} ${o.takeStage}`,
    `temporal_sticky_cache_hit{${labels('workflow_type="vectorActivation"')}} ${o.hits}`,
    `temporal_sticky_cache_miss{${labels('').slice(0, -1)}} ${o.misses}`,
    `temporal_sticky_cache_size{${labels('').slice(0, -1)}} 61`,
    'konfidence_status_writes_total{kind="VectorActivation"} 12',
    '',
  ].join('\n');
}

describe('the SDK counters of a role', () => {
  it('are read by type, the histograms by their count, other series left out', () => {
    const counts = sdkCounts(exposition({ activationTasks: 10, lockTasks: 14, takeStage: 4, hits: 20, misses: 2 }));
    expect(counts).toEqual({
      workflowTasks: { vectorActivation: 10, stageLock: 14 },
      localActivities: { takeStage: 4 },
      cacheHits: { vectorActivation: 20 },
      cacheMisses: { all: 2 },
    });
  });

  it('give what the activations of a window cost each, to a tenth', () => {
    const start = sdkCounts(exposition({ activationTasks: 10, lockTasks: 14, takeStage: 4, hits: 20, misses: 2 }))!;
    const end = sdkCounts(exposition({ activationTasks: 34, lockTasks: 47, takeStage: 14, hits: 51, misses: 2 }))!;
    const per = countsPerActivation(start, end, 10);
    expect(per).toEqual({
      workflowTasks: { vectorActivation: 2.4, stageLock: 3.3 },
      localActivities: { takeStage: 1 },
      cacheHits: { vectorActivation: 3.1 },
      cacheMisses: { all: 0 },
    });
    expect(describeCounts(per)).toBe(
      'workflowTasks 5.7 (vectorActivation 2.4, stageLock 3.3); localActivities 1 (takeStage 1); cacheHits 3.1 (vectorActivation 3.1); cacheMisses 0',
    );
  });

  it('count a series first seen inside the window from zero', () => {
    const start = sdkCounts('temporal_num_pollers{poller_type="workflow_task"} 2')!;
    const end = sdkCounts(exposition({ activationTasks: 5, lockTasks: 0, takeStage: 0, hits: 0, misses: 3 }))!;
    expect(countsPerActivation(start, end, 5).cacheMisses).toEqual({ all: 0.6 });
  });

  it('round what does not divide evenly to a tenth', () => {
    const start = sdkCounts(exposition({ activationTasks: 0, lockTasks: 0, takeStage: 0, hits: 0, misses: 0 }))!;
    const end = sdkCounts(exposition({ activationTasks: 7, lockTasks: 10, takeStage: 3, hits: 2, misses: 1 }))!;
    expect(countsPerActivation(start, end, 3).workflowTasks).toEqual({ vectorActivation: 2.3, stageLock: 3.3 });
  });

  it('add up the task queues of one type, whichever label comes first', () => {
    const counts = sdkCounts(
      [
        'temporal_sticky_cache_hit{workflow_type="stageLock",task_queue="a"} 4',
        'temporal_sticky_cache_hit{task_queue="b",workflow_type="stageLock"} 5',
      ].join('\n'),
    );
    expect(counts?.cacheHits).toEqual({ stageLock: 9 });
  });

  it("are no counts at all when the SDK's part of the text is missing", () => {
    const unavailable = [
      '# Temporal SDK metrics unavailable: http://127.0.0.1:9464/metrics: fetch failed',
      'konfidence_status_writes_total{kind="VectorActivation"} 12',
    ].join('\n');
    expect(sdkCounts(unavailable)).toBeUndefined();
    expect(sdkCounts('')).toBeUndefined();
  });

  it('read as nothing when a counter has no series, and cannot be divided by no activations', () => {
    const start = sdkCounts('temporal_num_pollers 1')!;
    expect(describeCounts(countsPerActivation(start, start, 4))).toBe(
      'workflowTasks 0; localActivities 0; cacheHits 0; cacheMisses 0',
    );
    expect(() => countsPerActivation(start, start, 0)).toThrow(RangeError);
  });
});

describe('a Prometheus text exposition', () => {
  it('gives each sample with its labels, a value with a comma or an escaped quote kept whole', () => {
    const text = [
      '# HELP apiserver_request_total Counter of apiserver requests',
      'apiserver_request_total{code="200",resource="leases",verb="PUT"} 6',
      'service_requests{operation="PollWorkflowTaskQueue",note="a, \\"quoted\\" one"} 1.5e+2',
      'process_start_time_seconds 1.7e9',
      '',
    ].join('\n');
    expect([...metricSamples(text)]).toEqual([
      { name: 'apiserver_request_total', labels: { code: '200', resource: 'leases', verb: 'PUT' }, value: 6 },
      {
        name: 'service_requests',
        labels: { operation: 'PollWorkflowTaskQueue', note: 'a, \\"quoted\\" one' },
        value: 150,
      },
      { name: 'process_start_time_seconds', labels: {}, value: 1.7e9 },
    ]);
  });
});
