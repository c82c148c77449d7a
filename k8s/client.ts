/**
 * Kubernetes client helpers shared by activities, workers, scripts and tests. Never import this from
 * workflow code: @kubernetes/client-node does I/O and is not deterministic.
 */
import { createHash } from 'node:crypto';
import type { Agent } from 'node:http';
import * as tls from 'node:tls';
import * as k8s from '@kubernetes/client-node';
import { statusMessage } from './status-message.js';

export { k8s };

/**
 * client-node 1.x makes a new https.Agent for every request (KubeConfig.createAgent), so every
 * call opens a TLS connection of its own: a handshake, and the client key parsed again, on both
 * ends. Profiled under a burst of activations that was half of this process's CPU time, and a good
 * part of the apiserver's. One keep-alive agent per distinct set of agent options (cluster, CA,
 * client certificate and key; a rotated certificate gets a new one) makes the calls reuse their
 * connections, as client-go's transport cache does.
 */
function shareAgents(): void {
  const proto = k8s.KubeConfig.prototype as unknown as {
    createAgent: (cluster: unknown, options: Record<string, unknown>) => Agent;
    sharedAgents?: boolean;
  };
  if (proto.sharedAgents) return;
  const original = proto.createAgent;
  const agents = new Map<string, Agent>();
  proto.createAgent = function (this: k8s.KubeConfig, cluster, options) {
    const hash = createHash('sha256').update(JSON.stringify(cluster));
    // Certificates and keys as they are (a Buffer through JSON.stringify is an array of numbers).
    for (const name of Object.keys(options).sort()) {
      const value = options[name];
      hash.update(`\0${name}=`).update(Buffer.isBuffer(value) ? value : String(JSON.stringify(value)));
    }
    const key = hash.digest('hex');
    let agent = agents.get(key);
    if (!agent) {
      // One TLS context for all of the agent's connections: without it every new connection (a
      // burst opens several at once) parses the CA, certificate and key again (bench/burst profile).
      const direct = !(cluster as { proxyUrl?: string } | null)?.proxyUrl;
      // Made of all the options (it takes the TLS ones: CA, certificate, key, ciphers, ...): a
      // connection given a context ignores those options of its own.
      const secureContext = direct ? tls.createSecureContext(options as tls.SecureContextOptions) : undefined;
      agent = original.call(this, cluster, {
        ...options,
        keepAlive: true,
        ...(secureContext ? { secureContext } : {}),
      });
      // A few distinct configurations are expected (one per kubeconfig and credential); bound it anyway.
      if (agents.size >= 64) agents.delete(agents.keys().next().value!);
      agents.set(key, agent);
    }
    return agent;
  };
  proto.sharedAgents = true;
}
shareAgents();

/**
 * A deadline on every API call (watches, which stay open by design, take another path): without
 * one, a call whose connection stalls (an apiserver restarting behind a half-open connection)
 * waits for ever, and an activity attempt Temporal gave up on could see its write land long after
 * a later attempt, or another activation, moved on. Shorter than a core local activity's attempt
 * (30 s), so that the attempt fails on its own call, and is retried, before Temporal gives up on it.
 */
export const REQUEST_TIMEOUT_MS = 20_000;
let requestTimeoutMs = REQUEST_TIMEOUT_MS;

/** Tests: another deadline for the calls made from now on. */
export function setRequestTimeout(ms: number): void {
  requestTimeoutMs = ms;
}

function deadlineCalls(): void {
  type Context = { getSignal(): AbortSignal | undefined; setSignal(signal: AbortSignal): void };
  const proto = k8s.KubeConfig.prototype as unknown as {
    applySecurityAuthentication: (context: Context) => Promise<void>;
    deadlines?: boolean;
  };
  if (proto.deadlines) return;
  const original = proto.applySecurityAuthentication;
  // Every generated API call (and KubernetesObjectApi's) passes here just before it is sent.
  proto.applySecurityAuthentication = async function (this: k8s.KubeConfig, context: Context) {
    await original.call(this, context);
    if (!context.getSignal()) context.setSignal(AbortSignal.timeout(requestTimeoutMs));
  };
  proto.deadlines = true;
}
deadlineCalls();

/**
 * Whether a call failed because it passed its deadline: node-fetch's AbortError, or node:http's
 * (k8s/json-requests.ts). Told by its name, not its class: under Jest's VM modules node:http's
 * comes from another realm than the test's Error.
 */
const timedOut = (err: unknown) => (err as { name?: unknown } | null)?.name === 'AbortError';

/** From a kubeconfig path, else $KUBECONFIG / ~/.kube/config / the in-cluster service account. */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/** The user agent of each of our processes' requests: `konfidence-activation/<role>`. */
export const userAgentOf = (role: string) => `konfidence-activation/${role}`;

/**
 * The same configuration, its requests (calls and watches alike) sent with `userAgent`: an audit
 * log, or a person reading the apiserver's logs, tells our roles apart from each other and from
 * kubectl. A view of `kc` (its prototype), so a credential `kc` refreshes is the one used.
 */
export function withUserAgent(kc: k8s.KubeConfig, userAgent: string): k8s.KubeConfig {
  // applyOptions is where both paths (API calls and watches) gather their headers; it is private in the typings.
  type Options = { headers?: Record<string, unknown> };
  type WithOptions = { applyOptions: (this: unknown, opts: Options) => Promise<void> };
  const view = Object.create(kc) as k8s.KubeConfig;
  const applyOptions = (kc as unknown as WithOptions).applyOptions;
  (view as unknown as WithOptions).applyOptions = async function (this: unknown, opts: Options) {
    await applyOptions.call(this, opts);
    opts.headers = { ...opts.headers, 'User-Agent': userAgent };
  };
  return view;
}

export const FIELD_MANAGER = 'konfidence-activation';

/** Server-side apply: creates or converges the fields we own, safe to repeat. */
export async function apply<T extends k8s.KubernetesObject>(api: k8s.KubernetesObjectApi, object: T): Promise<T> {
  return api.patch(object, undefined, undefined, FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
}

/** The HTTP status of a failed apiserver call, or undefined for other errors. */
export function apiStatus(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

/** The apiserver's own message for a failed call (what kubectl would print). */
export function apiMessage(err: unknown): string {
  if (err instanceof k8s.ApiException) {
    return statusMessage(err.body, err.code);
  }
  if (timedOut(err)) return `the apiserver did not answer within ${requestTimeoutMs / 1000} s`;
  return err instanceof Error ? err.message : String(err);
}
