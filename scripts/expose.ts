/**
 * npm run expose -- SERVICE PORT [--namespace NS] [--service-port P]   (P: default 8080)
 *
 * Puts an HTTP server of your own, listening on 127.0.0.1:PORT, behind Service NS/SERVICE of the
 * local control plane, so that the local gateway routes to it: the Service's ClusterIP is on
 * loopback (docs/data-plane.md), and this process forwards what arrives there to your server until
 * Ctrl-C. Name the Service in a StageVersion's spec.backend (or an HTTPRoute's backendRef) and try a
 * plan against your own app. Only the local control plane (its own kubeconfig, whatever KUBECONFIG
 * says: nothing is written to another cluster) and only loopback (the target is always 127.0.0.1).
 */
import { createConnection, createServer, type Socket } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensureNamespace } from '../k8s/crds.js';
import { k8s, loadKubeConfig } from '../k8s/client.js';
import { loopbackService } from './apps/loopback-service.js';
import { stateDir } from './env/paths.js';

const USAGE = 'usage: npm run expose -- SERVICE PORT [--namespace NAMESPACE] [--service-port PORT]';
/** The Service's port unless --service-port says otherwise: not PORT, which a server on 0.0.0.0 holds on every address. */
const DEFAULT_SERVICE_PORT = 8080;

function parse(argv: string[]): { service: string; port: number; namespace: string; servicePort: number } {
  const positionals: string[] = [];
  const options: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith('--')) {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${arg} needs a value; ${USAGE}`);
      options[arg.slice(2)] = value;
    } else positionals.push(arg);
  }
  const unknown = Object.keys(options).filter((o) => !['namespace', 'service-port'].includes(o));
  if (unknown.length) throw new Error(`unknown option --${unknown[0]}; ${USAGE}`);
  const [service, portText] = positionals;
  if (!service || !portText || positionals.length > 2) throw new Error(USAGE);
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(service))
    throw new Error(`"${service}" is no Service name (a DNS label: lower case letters, digits, "-")`);
  const portOf = (text: string, what: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`${what} "${text}" is not a port (1 to 65535)`);
    return n;
  };
  const port = portOf(portText, 'PORT');
  return {
    service,
    port,
    namespace: options.namespace ?? 'default',
    servicePort: options['service-port'] ? portOf(options['service-port'], '--service-port') : DEFAULT_SERVICE_PORT,
  };
}

let args: ReturnType<typeof parse>;
try {
  args = parse(process.argv.slice(2));
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
const kubeconfig = join(stateDir, 'kubeconfig');
if (!existsSync(kubeconfig)) {
  console.error(`no local control plane at ${stateDir}: start it with npm run env:up`);
  process.exit(2);
}
const kc = loadKubeConfig(kubeconfig);
await ensureNamespace(kc, args.namespace);
const address = await loopbackService(kc.makeApiClient(k8s.CoreV1Api), args.namespace, args.service, args.servicePort);

// Each connection to the Service's address is piped to the server on 127.0.0.1:PORT.
const sockets = new Set<Socket>();
const forwarder = createServer((inbound) => {
  const outbound = createConnection({ host: '127.0.0.1', port: args.port });
  for (const s of [inbound, outbound]) {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  }
  inbound.pipe(outbound).pipe(inbound);
  inbound.on('close', () => outbound.destroy());
  outbound.on('close', () => inbound.destroy());
});
await new Promise<void>((resolve) => {
  forwarder.once('error', (err: NodeJS.ErrnoException) => {
    const why =
      err.code === 'EADDRINUSE'
        ? `a process already listens on port ${args.servicePort} of every address (a server on 0.0.0.0?): pick another --service-port`
        : err.message;
    console.error(`cannot listen on ${address}:${args.servicePort}: ${why}`);
    process.exit(1);
  });
  forwarder.listen(args.servicePort, address, resolve);
});
console.log(`Service ${args.namespace}/${args.service} (${address}:${args.servicePort}) forwards to 127.0.0.1:${args.port}
  a StageVersion's spec.backend: { service: ${args.service}, port: ${args.servicePort} }
  an HTTPRoute's backendRef:     { name: ${args.service}, port: ${args.servicePort} }, parentRefs the local Gateway konfidence-gateway/local
  requests:                      curl -H 'Host: <the route's hostname>' $KONFIDENCE_GATEWAY_URL/
Ctrl-C stops forwarding; the Service stays (kubectl delete service ${args.service} -n ${args.namespace}).`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    forwarder.close();
    for (const s of sockets) s.destroy();
    process.exit(0);
  });
}
