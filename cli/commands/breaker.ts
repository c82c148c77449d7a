/**
 * `breaker status|close|open NAME`: a CircuitBreaker of the system namespace (docs/scale.md).
 * close sets the konfidence.cloud/close annotation (what a kubectl user would do) and applies it at
 * once, so the answer does not wait for the next activation to read the breaker; the value acts
 * once whoever applies it. open writes the status itself. Both are read-modify-writes.
 */
import { randomBytes } from 'node:crypto';
import {
  ANNOTATION_CLOSE,
  DEFAULT_SYSTEM_NAMESPACE,
  breakerScope,
  type CircuitBreakerResource,
} from '../../api/index.js';
import { applyRequest, phaseOf, secondsUntilClose, settle } from '../../decisions/breaker.js';
import { stringOption, type Command } from '../command.js';
import { EXIT, notFound, usageError } from '../exit-codes.js';

const ACTIONS = ['status', 'close', 'open'] as const;
type Action = (typeof ACTIONS)[number];

function describe(b: CircuitBreakerResource, now: Date): string {
  const s = b.status ?? {};
  const failures = `${(s.recentFailures ?? []).length}/${b.spec.failureThreshold} failures within ${b.spec.windowSeconds}s`;
  const closes = secondsUntilClose({ name: b.metadata.name!, spec: b.spec, status: s }, now);
  const lines = [
    `CircuitBreaker ${b.metadata.namespace}/${b.metadata.name} (scope: ${breakerScope(b.spec)}): ${phaseOf(s)}${s.reason ? ` (${s.reason})` : ''}${s.lastTransitionTime ? ` since ${s.lastTransitionTime}` : ''}`,
    ...(s.message ? [`  ${s.message}`] : []),
    `  ${failures}${closes !== undefined ? `; closes by itself in ${closes}s` : phaseOf(s) === 'Open' ? '; closes only by hand' : ''}`,
    ...(b.spec.rateLimit
      ? [
          `  rate limit: ${b.spec.rateLimit.routingChanges} routing changes per ${b.spec.rateLimit.intervalSeconds}s (${s.tokens ?? b.spec.rateLimit.routingChanges} tokens at ${s.lastRefill ?? 'start'})`,
        ]
      : []),
  ];
  return lines.join('\n');
}

export const breaker: Command = {
  name: 'breaker',
  summary: 'show, close or open a CircuitBreaker (new activations wait while one is Open)',
  description: [
    'status: phase, reason, recent failures and the rate limit of a CircuitBreaker.',
    `close: closes it by hand (sets ${ANNOTATION_CLOSE} to a fresh value, as "kubectl annotate cb NAME ${ANNOTATION_CLOSE}=VALUE --overwrite"`,
    'does, and applies it); waiting activations go on at their next ask (within 30 s).',
    'open: opens it by hand; it then closes only by hand.',
    `Breakers live in the system namespace: --system-namespace, else $KONFIDENCE_SYSTEM_NAMESPACE, else ${DEFAULT_SYSTEM_NAMESPACE}.`,
    'Exit 0 when done, 3 when the breaker does not exist.',
  ].join('\n'),
  positionals: [
    { name: 'ACTION', required: true, description: 'status, close or open' },
    { name: 'NAME', required: true, description: 'name of the CircuitBreaker' },
  ],
  options: [
    {
      name: 'system-namespace',
      value: 'NAMESPACE',
      description: `namespace of the breakers (default ${DEFAULT_SYSTEM_NAMESPACE})`,
    },
  ],
  examples: ['breaker status all-namespaces', 'breaker close all-namespaces --system-namespace konfidence-system'],
  async validate(args) {
    if (!ACTIONS.includes(args.positionals[0] as Action))
      throw usageError(`unknown breaker action "${args.positionals[0]}": use status, close or open`);
  },
  async run(ctx, args) {
    const [action, name] = args.positionals as [Action, string];
    const ns =
      stringOption(args, 'system-namespace') ?? (process.env.KONFIDENCE_SYSTEM_NAMESPACE || DEFAULT_SYSTEM_NAMESPACE);
    // Loaded here, not with the module: help and usage errors need no Kubernetes client.
    const { BreakerStore } = await import('../../k8s/breaker-store.js');
    const store = new BreakerStore(ctx.kc);
    const missing = () =>
      notFound(
        `CircuitBreaker ${name}`,
        ns,
        `list them with "kubectl get circuitbreakers -n ${ns}", or pass --system-namespace`,
      );
    let b: CircuitBreakerResource | undefined;
    if (action === 'status') b = await store.get(ns, name);
    else if (action === 'close') {
      const value = `cli-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
      if (!(await store.annotate(ns, name, { [ANNOTATION_CLOSE]: value }))) throw missing();
      b = await store.update(ns, name, (o) =>
        settle({ name, spec: o.spec, status: o.status ?? {} }, value, new Date()),
      );
    } else {
      const token = `cli-open-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
      b = await store.update(ns, name, (o) =>
        applyRequest({ name, spec: o.spec, status: o.status ?? {} }, 'open', token, new Date()),
      );
    }
    if (!b) throw missing();
    const found = b;
    ctx.print({ name, namespace: ns, spec: found.spec, status: found.status ?? {} }, () => describe(found, new Date()));
    return EXIT.ok;
  },
};
