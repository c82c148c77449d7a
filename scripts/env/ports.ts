/** Free loopback ports for the local control plane. */
import { createServer } from 'node:net';

import { freePort } from '../../shared/free-port.js';

export { freePort };

export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free loopback port below 32768, where the kernel hands out no port to an outgoing connection
 * (its ephemeral range starts there): a server restarted on it finds it free. temporal-server needs
 * it besides: its SQL schema stores the services' ports as SMALLINT (cluster_membership). Tries
 * random ports of 20000-32767, a bounded number of times.
 */
export async function freeLowPort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (await isPortFree(port)) return port;
  }
  throw new Error('no free loopback port between 20000 and 32767 after 200 tries');
}

/**
 * Keeps a previously used port when it is free, so URLs stay the same across restarts. A server
 * that was just killed may hold its port for a moment: wait a little before choosing another.
 */
export async function reusePort(
  previous: number | undefined,
  waitMs = 5_000,
  fresh: () => Promise<number> = freePort,
): Promise<number> {
  if (previous) {
    const deadline = Date.now() + waitMs;
    do {
      if (await isPortFree(previous)) return previous;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
  }
  return fresh();
}
