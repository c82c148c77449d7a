/** Test access to the real Temporal dev server that jest's global setup started. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';

export function temporalAddress(): string {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set: jest global setup did not run');
  return address;
}

export const temporalNamespace = () => process.env.TEMPORAL_NAMESPACE ?? 'default';

export async function temporalClient(
  namespace = temporalNamespace(),
): Promise<{ client: Client; close: () => Promise<void> }> {
  const connection = await Connection.connect({ address: temporalAddress() });
  return { client: new Client({ connection, namespace }), close: () => connection.close() };
}

export function workerConnection(): Promise<NativeConnection> {
  return NativeConnection.connect({ address: temporalAddress() });
}
