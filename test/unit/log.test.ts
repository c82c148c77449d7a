/**
 * The project's logger (telemetry/log.ts) and the Temporal SDK's adapter onto it
 * (telemetry/temporal.ts): JSON records for a log collector, readable lines on a terminal, the
 * level from the environment, and the fields that say which Stage, activation and workflow.
 */
import { createLogger, loggerOptionsFromEnv, type Format, type Level } from '../../telemetry/log.js';
import { sdkLogger } from '../../telemetry/temporal.js';

const at = new Date('2026-05-04T10:11:12.345Z');

function collect(format: Format, level: Level = 'info') {
  const lines: string[] = [];
  const logger = createLogger({ format, level, write: (l) => lines.push(l), now: () => at });
  return { logger, lines };
}

describe('format', () => {
  it("JSON: one object per line with time, level, message and the fields, the child's fields included", () => {
    const { logger, lines } = collect('json');
    logger
      .child({ component: 'watcher' })
      .child({ namespace: 'shop', stage: 'web' })
      .warn('the "lock" is busy\nwaiting', {
        activation: 'web-to-7',
        workflowId: 'vectoractivation/shop/web-to-7/u1',
        attempt: 2,
      });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      time: '2026-05-04T10:11:12.345Z',
      level: 'warn',
      msg: 'the "lock" is busy\nwaiting',
      component: 'watcher',
      namespace: 'shop',
      stage: 'web',
      activation: 'web-to-7',
      workflowId: 'vectoractivation/shop/web-to-7/u1',
      attempt: 2,
    });
  });

  it('text: clock, level, [component], message, then namespace, stage, activation, workflowId and the rest', () => {
    const { logger, lines } = collect('text');
    logger
      .child({ component: 'stage-controller', workflowId: 'w1', namespace: 'shop' })
      .info('created StageVersion web-7', { stage: 'web', note: 'two words', activation: 'web-to-7' });
    expect(lines).toEqual([
      '10:11:12.345 INFO  [stage-controller] created StageVersion web-7 namespace=shop stage=web activation=web-to-7 workflowId=w1 note="two words"',
    ]);
  });

  it('an Error field shows its message; a field that does not serialize keeps the record', () => {
    const { logger, lines } = collect('json');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    logger.error('failed', { error: new Error('boom') });
    logger.error('odd field', { cycle });
    expect(JSON.parse(lines[0]!).error).toBe('boom');
    expect(JSON.parse(lines[1]!).msg).toBe('odd field');
  });

  it('line(): printed as it is, for the "[write] IDENTITY ..." trace', () => {
    const { logger, lines } = collect('json');
    logger.child({ component: 'main' }).line('[write] pod-a k8s PATCH /apis/x');
    expect(lines).toEqual(['[write] pod-a k8s PATCH /apis/x']);
  });
});

describe('level', () => {
  it.each<[Level, string[]]>([
    ['trace', ['trace', 'debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['error', ['error']],
  ])('at %s, records of %j are written', (level, written) => {
    const { logger, lines } = collect('json', level);
    for (const l of ['trace', 'debug', 'info', 'warn', 'error'] as const) logger[l](l);
    expect(lines.map((l) => JSON.parse(l).level)).toEqual(written);
  });

  it("a component's log option: level from its fields (default info), filtered alike", () => {
    const { logger, lines } = collect('json', 'warn');
    const log = logger.child({ component: 'watcher' }).fn();
    log('routine');
    log('watch broke', { level: 'warn', namespace: 'shop' });
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      expect.objectContaining({ level: 'warn', msg: 'watch broke', component: 'watcher', namespace: 'shop' }),
    ]);
  });
});

describe('environment', () => {
  it.each([
    [{}, false, { level: 'info', format: 'json' }],
    [{}, true, { level: 'info', format: 'text' }],
    [{ KONFIDENCE_LOG_LEVEL: 'DEBUG' }, false, { level: 'debug', format: 'json' }],
    [{ KONFIDENCE_LOG_LEVEL: 'warn', KONFIDENCE_LOG_FORMAT: 'json' }, true, { level: 'warn', format: 'json' }],
    [{ KONFIDENCE_LOG_FORMAT: 'text' }, false, { level: 'info', format: 'text' }],
  ])('%j on a terminal: %s → %j', (env, tty, expected) => {
    expect(loggerOptionsFromEnv(env, tty)).toEqual(expected);
  });

  it('an unknown level fails with the accepted values', () => {
    expect(() => loggerOptionsFromEnv({ KONFIDENCE_LOG_LEVEL: 'verbose' }, false)).toThrow(
      'KONFIDENCE_LOG_LEVEL: "verbose" is not one of trace, debug, info, warn, error',
    );
  });
});

describe('the Temporal SDK through the logger', () => {
  it("a workflow's record: the activation and its namespace from the workflow id, the Temporal namespace renamed", () => {
    const { logger, lines } = collect('json', 'info');
    const sdk = sdkLogger(logger);
    sdk.warn('lock notice not delivered', {
      sdkComponent: 'workflow',
      namespace: 'default',
      taskQueue: 'konfidence-core',
      workflowId: 'vectoractivation/shop/web-to-7/u1',
      taskToken: 'opaque',
    });
    sdk.info('lock holder closed', { sdkComponent: 'workflow', workflowId: 'stage-lock/shop/web' });
    sdk.debug('not at info');
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        time: at.toISOString(),
        level: 'warn',
        msg: 'lock notice not delivered',
        component: 'temporal-workflow',
        temporalNamespace: 'default',
        taskQueue: 'konfidence-core',
        workflowId: 'vectoractivation/shop/web-to-7/u1',
        namespace: 'shop',
        activation: 'web-to-7',
      },
      {
        time: at.toISOString(),
        level: 'info',
        msg: 'lock holder closed',
        component: 'temporal-workflow',
        workflowId: 'stage-lock/shop/web',
        namespace: 'shop',
        stage: 'web',
      },
    ]);
  });
});
