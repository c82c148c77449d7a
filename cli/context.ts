/**
 * What every command works with: the Kubernetes namespace and client (objects read typed, parsed by
 * the api/ schemas), the output format, and a Temporal client on demand. Built from flags, then the
 * environment, then defaults.
 */
import type { Client } from '@temporalio/client';
import { stageResource, stageVersionResource, vectorActivationResource } from '../api/index.js';
import { k8s, loadKubeConfig, userAgentOf, withUserAgent } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { activeUsageName, targetUsageName } from '../shared/names.js';
import { notFound, usageError } from './exit-codes.js';
import type { Usages } from './views.js';
import type { z } from 'zod';
import { describeIssues } from '../api/issues.js';

/** Connecting gets this long: a status must not hang on an unreachable server. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * Each Temporal call gets this long. A busy server answers Worker Deployment calls late (they are
 * queries and updates on a server-side workflow); the connection's own retry interceptor repeats
 * UNAVAILABLE and RESOURCE_EXHAUSTED within this deadline.
 */
const CALL_DEADLINE_MS = 30_000;

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

export interface Settings {
  namespace: string;
  output: 'table' | 'json';
  temporalAddress: string;
  temporalNamespace: string;
  /** How the CLI was called: "konfidence" or, as a kubectl plugin, "kubectl konfidence". */
  program: string;
}

export function loadKube(options: Record<string, string | boolean>): k8s.KubeConfig {
  try {
    return withUserAgent(
      loadKubeConfig(typeof options.kubeconfig === 'string' ? options.kubeconfig : undefined),
      userAgentOf('cli'),
    );
  } catch (err) {
    throw usageError(
      `cannot load the kubeconfig ${options.kubeconfig ?? process.env.KUBECONFIG ?? '(default)'}: ${(err as Error).message}`,
    );
  }
}

/** Flags first, then the environment and the kubeconfig context, then defaults. Pure. */
export function settingsFrom(
  options: Record<string, string | boolean>,
  env: NodeJS.ProcessEnv,
  contextNamespace: string | undefined,
  program: string,
): Settings {
  const str = (name: string) => (typeof options[name] === 'string' ? (options[name] as string) : undefined);
  return {
    namespace: str('namespace') ?? contextNamespace ?? 'default',
    output: str('output') === 'json' ? 'json' : 'table',
    temporalAddress: str('temporal-address') ?? (env.TEMPORAL_ADDRESS || '127.0.0.1:7233'),
    temporalNamespace: str('temporal-namespace') ?? (env.TEMPORAL_NAMESPACE || 'default'),
    program,
  };
}

type Parsed<S extends z.ZodType> = z.infer<S>;

export class Context {
  readonly objects: CustomObjects;

  constructor(
    readonly kc: k8s.KubeConfig,
    readonly settings: Settings,
    readonly io: Io,
  ) {
    this.objects = new CustomObjects(kc);
  }

  get namespace(): string {
    return this.settings.namespace;
  }

  get json(): boolean {
    return this.settings.output === 'json';
  }

  /** Prints a result: JSON (two-space indented) or the table text. */
  print(value: unknown, text: () => string): void {
    this.io.out(this.json ? JSON.stringify(value, null, 2) : text());
  }

  /**
   * Parses an object with its schema; one that does not match (written around the CRD, by an older
   * version) is reported and left out rather than failing the whole command.
   */
  private parse<S extends z.ZodType>(schema: S, kind: string, o: unknown): Parsed<S> | undefined {
    const parsed = schema.safeParse(o);
    if (parsed.success) return parsed.data;
    const name = (o as { metadata?: { name?: string } }).metadata?.name;
    this.io.err(
      `warning: ${kind} ${this.namespace}/${name} does not match its schema and is left out: ${describeIssues(parsed.error)}`,
    );
    return undefined;
  }

  async activation(name: string) {
    const o = await this.objects.get('VectorActivation', this.namespace, name);
    const va = o && this.parse(vectorActivationResource, 'VectorActivation', o);
    if (!va)
      throw notFound(
        `VectorActivation ${name}`,
        this.namespace,
        `list them with "${this.settings.program} history STAGE -n ${this.namespace}" or "kubectl get va -n ${this.namespace}"`,
      );
    return va;
  }

  async activations() {
    const items = await this.objects.list('VectorActivation', this.namespace);
    return items.map((o) => this.parse(vectorActivationResource, 'VectorActivation', o)).filter((a) => a !== undefined);
  }

  async stage(name: string) {
    const o = await this.objects.get('Stage', this.namespace, name);
    return o ? this.parse(stageResource, 'Stage', o) : undefined;
  }

  async requireStage(name: string) {
    const stage = await this.stage(name);
    if (!stage)
      throw notFound(
        `Stage ${name}`,
        this.namespace,
        `list them with "kubectl get stages -n ${this.namespace}", or pass the namespace with -n`,
      );
    return stage;
  }

  async stages() {
    const items = await this.objects.list('Stage', this.namespace);
    return items.map((o) => this.parse(stageResource, 'Stage', o)).filter((s) => s !== undefined);
  }

  async stageVersions() {
    const items = await this.objects.list('StageVersion', this.namespace);
    return items.map((o) => this.parse(stageVersionResource, 'StageVersion', o)).filter((sv) => sv !== undefined);
  }

  async stageVersion(name: string) {
    const o = await this.objects.get('StageVersion', this.namespace, name);
    return o ? this.parse(stageVersionResource, 'StageVersion', o) : undefined;
  }

  /**
   * Per Stage, the StageVersions its well-known usages name: "<stage>-active" (what serves; the
   * record the activation writes) and "<stage>-target". One list for all Stages of the namespace.
   */
  async usages(): Promise<(stage: string) => Usages> {
    const items = await this.objects.list('StageVersionUsage', this.namespace);
    const ref = (name: string) =>
      items.find((u) => u.metadata.name === name)?.spec?.stageVersionRef?.name as string | undefined;
    return (stage) => {
      const [active, target] = [ref(activeUsageName(stage)), ref(targetUsageName(stage))];
      return { ...(active ? { active } : {}), ...(target ? { target } : {}) };
    };
  }

  /**
   * A Temporal client, or why there is none: Temporal is optional for the CLI (only the live
   * progress comes from it), so an unreachable server is reported, not fatal.
   */
  async temporal(): Promise<
    { client: Client; call: <T>(fn: () => Promise<T>) => Promise<T>; close: () => Promise<void> } | { error: string }
  > {
    const { temporalAddress: address, temporalNamespace: namespace } = this.settings;
    try {
      // Loaded here: only status needs Temporal, and the SDK takes a while to load.
      const { Client, Connection } = await import('@temporalio/client');
      const connection = await Connection.connect({ address, connectTimeout: CONNECT_TIMEOUT_MS });
      return {
        client: new Client({ connection, namespace }),
        call: (fn) => connection.withDeadline(Date.now() + CALL_DEADLINE_MS, fn),
        close: () => connection.close(),
      };
    } catch (err) {
      return { error: `Temporal at ${address} is unreachable (${(err as Error).message.split('\n')[0]})` };
    }
  }
}
