#!/usr/bin/env node
/**
 * One version of a local test app: an HTTP server on one address (a Service's ClusterIP on
 * loopback) that answers every request with its version, in the body and in the header
 * `x-konfidence-version`. Told so on its control path, it fails a share of requests (503, marked
 * `x-konfidence-injected: 1`, so that a load generator tells the failures it asked for from any
 * other) or answers them later. Plain Node, no dependencies: one process per version, as a
 * deployment runs one Pod per version.
 *
 *   node scripts/apps/app-server.mjs --address 127.200.3.4 --port 8080 --version shop-2
 *   POST /_konfidence/behaviour {"failRatio": 0.2, "delayMs": 50}   (both optional)
 *
 * It says `listening` on stdout once it accepts connections; SIGTERM closes it (connections it
 * holds are answered, then closed), as a Pod's termination does.
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { address: { type: 'string' }, port: { type: 'string' }, version: { type: 'string' } },
});
if (!values.address || !values.port || !values.version) {
  console.error('usage: app-server.mjs --address IP --port PORT --version NAME');
  process.exit(2);
}
const version = values.version;
const behaviour = { failRatio: 0, delayMs: 0 };
const CONTROL_PATH = '/_konfidence/behaviour';

/** Failures spread evenly: the n-th request fails when the running share falls behind failRatio. */
let served = 0;
let failed = 0;
const shouldFail = () => {
  served += 1;
  if (failed < behaviour.failRatio * served) {
    failed += 1;
    return true;
  }
  return false;
};

function control(req, res) {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    try {
      const asked = body ? JSON.parse(body) : {};
      for (const key of ['failRatio', 'delayMs']) {
        if (asked[key] === undefined) continue;
        if (typeof asked[key] !== 'number' || asked[key] < 0 || (key === 'failRatio' && asked[key] > 1))
          throw new Error(`${key} must be a number in range`);
        behaviour[key] = asked[key];
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ version, ...behaviour }));
    } catch (err) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`${err.message}\n`);
    }
  });
}

const server = createServer((req, res) => {
  if (req.url === CONTROL_PATH) return control(req, res);
  const answer = () => {
    const fail = shouldFail();
    res.writeHead(fail ? 503 : 200, {
      'content-type': 'text/plain',
      'x-konfidence-version': version,
      ...(fail ? { 'x-konfidence-injected': '1' } : {}),
    });
    res.end(fail ? `${version} fails this request, as told\n` : `${version}\n`);
  };
  if (behaviour.delayMs > 0) setTimeout(answer, behaviour.delayMs);
  else answer();
});
server.keepAliveTimeout = 30_000;
server.listen(Number(values.port), values.address, () =>
  console.log(`listening on ${values.address}:${values.port} as ${version}`),
);
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  // Idle kept-alive connections would hold close() open; busy ones finish their answer first.
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 5_000).unref();
});
