/**
 * The project's one logger. A record is a level, a message and fields; the fields that say what it
 * is about are fixed names (component, namespace, stage, activation, workflowId) so that a log
 * search can follow one Stage or one activation across every process.
 *
 * Output, one record per line on stdout: JSON when stdout is not a terminal (what a cluster's log
 * collector reads), a readable line on a terminal. KONFIDENCE_LOG_LEVEL (trace, debug, info, warn,
 * error; default info) filters; KONFIDENCE_LOG_FORMAT (json, text; default by terminal) overrides
 * the choice of format. The Temporal SDK's logs come here too (telemetry/temporal.ts).
 */
export const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type Level = (typeof LEVELS)[number];
export type Format = 'json' | 'text';

/** What a record is about; any other field is allowed and printed after these. */
export interface LogFields {
  component?: string;
  /** Kubernetes namespace (never the Temporal namespace: that one is `temporalNamespace`). */
  namespace?: string;
  stage?: string;
  /** The VectorActivation's name. */
  activation?: string;
  workflowId?: string;
  [field: string]: unknown;
}

/**
 * The shape the components take as their `log` option (tests pass `() => undefined` or collect the
 * messages): a message, and optionally fields, of which `level` picks the record's level (default info).
 */
export type LogFn = (message: string, fields?: LogFields & { level?: Level }) => void;

export interface Logger {
  readonly level: Level;
  enabled(level: Level): boolean;
  log(level: Level, message: string, fields?: LogFields): void;
  trace(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** The same logger with these fields on every record (a child's fields win over its parent's). */
  child(fields: LogFields): Logger;
  /** A `log` option for a component: records at `fields.level` (default info) with this logger's fields. */
  fn(): LogFn;
  /**
   * A line printed as it is, between the records: for line-oriented traces that people and tests
   * grep by prefix (KONFIDENCE_LOG_WRITES's "[write] IDENTITY ..."), which a JSON wrapper would hide.
   */
  line(text: string): void;
}

export interface LoggerOptions {
  level?: Level;
  format?: Format;
  /** Where lines go (default stdout); tests collect them. */
  write?: (line: string) => void;
  fields?: LogFields;
  now?: () => Date;
}

/** Level and format from the environment; an unknown value fails at start, like every setting. */
export function loggerOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  isTty = Boolean(process.stdout.isTTY),
): { level: Level; format: Format } {
  const level = (env.KONFIDENCE_LOG_LEVEL || 'info').toLowerCase();
  if (!(LEVELS as readonly string[]).includes(level))
    throw new Error(`invalid configuration: KONFIDENCE_LOG_LEVEL: "${level}" is not one of ${LEVELS.join(', ')}`);
  const format = (env.KONFIDENCE_LOG_FORMAT || (isTty ? 'text' : 'json')).toLowerCase();
  if (format !== 'json' && format !== 'text')
    throw new Error(`invalid configuration: KONFIDENCE_LOG_FORMAT: "${format}" is not json or text`);
  return { level: level as Level, format };
}

/** Order of the fixed fields in a readable line; the rest follow in the order given. */
const FIXED = ['namespace', 'stage', 'activation', 'workflowId'] as const;

function errorText(value: unknown): unknown {
  return value instanceof Error ? value.message : value;
}

function textValue(value: unknown): string {
  const v = errorText(value);
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s !== undefined && /^[^\s"=]+$/.test(s) ? s : JSON.stringify(s ?? String(v));
}

export function formatRecord(format: Format, time: Date, level: Level, message: string, fields: LogFields): string {
  const defined = Object.entries(fields).filter(([, v]) => v !== undefined);
  if (format === 'json') {
    const rest = Object.fromEntries(
      defined.filter(([k]) => !['time', 'level', 'msg'].includes(k)).map(([k, v]) => [k, errorText(v)]),
    );
    try {
      return JSON.stringify({ time: time.toISOString(), level, msg: message, ...rest });
    } catch {
      // A field that does not serialize (a cycle) must not lose the record.
      return JSON.stringify({ time: time.toISOString(), level, msg: message, fields: String(rest) });
    }
  }
  const { component, ...others } = Object.fromEntries(defined) as LogFields;
  const ordered = [
    ...FIXED.filter((k) => k in others).map((k) => [k, others[k]] as const),
    ...Object.entries(others).filter(([k]) => !(FIXED as readonly string[]).includes(k)),
  ];
  const clock = time.toISOString().slice(11, 23);
  return [
    clock,
    level.toUpperCase().padEnd(5),
    ...(component ? [`[${component}]`] : []),
    message,
    ...ordered.map(([k, v]) => `${k}=${textValue(v)}`),
  ].join(' ');
}

export function createLogger(o: LoggerOptions = {}): Logger {
  const level = o.level ?? 'info';
  const format = o.format ?? 'json';
  const write = o.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const now = o.now ?? (() => new Date());
  const threshold = LEVELS.indexOf(level);
  const make = (fields: LogFields): Logger => {
    const enabled = (l: Level) => LEVELS.indexOf(l) >= threshold;
    const log = (l: Level, message: string, extra?: LogFields) => {
      if (!enabled(l)) return;
      write(formatRecord(format, now(), l, message, extra ? { ...fields, ...extra } : fields));
    };
    const made: Logger = {
      level,
      enabled,
      log,
      trace: (m, f) => log('trace', m, f),
      debug: (m, f) => log('debug', m, f),
      info: (m, f) => log('info', m, f),
      warn: (m, f) => log('warn', m, f),
      error: (m, f) => log('error', m, f),
      child: (more) => make({ ...fields, ...more }),
      fn: () => (message, f) => {
        const { level: l = 'info', ...rest } = f ?? {};
        log(l, message, rest);
      },
      line: (text) => write(text),
    };
    return made;
  };
  return make(o.fields ?? {});
}

let root: Logger | undefined;

/**
 * The process's logger, made from the environment on first use. An invalid KONFIDENCE_LOG_LEVEL
 * throws here, at the first record, which in every process is at start.
 */
export function logger(): Logger {
  root ??= createLogger(loggerOptionsFromEnv());
  return root;
}

/** A component's logger: `logger().child({ component })`. */
export const componentLogger = (component: string, fields: LogFields = {}): Logger =>
  logger().child({ component, ...fields });
