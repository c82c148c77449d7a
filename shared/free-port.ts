/**
 * A free loopback port: listen on port 0, take the port the kernel chose, close. Node-only (not for
 * workflow code). Used by the local control plane, the unit tests' test server and the SDK's
 * metrics exporter when no address is configured.
 */
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
