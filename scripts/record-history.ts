/**
 * Records a workflow's history from the local Temporal (test namespace unless --namespace) in the
 * form test/unit/replay.test.ts replays: the History message's protobufjs object form.
 * Run: npx tsx scripts/record-history.ts <workflowId> <out.json> [--namespace NS]
 */
import { writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { current } from './env/control-plane.js';

const args = process.argv.slice(2);
const i = args.indexOf('--namespace');
const namespace = i >= 0 ? args.splice(i, 2)[1] : undefined;
const [workflowId, out] = args;
const cp = current();
if (!workflowId || !out || !cp) {
  console.error(
    cp
      ? 'usage: record-history.ts <workflowId> <out.json> [--namespace NS]'
      : 'the local servers are down: npm run env:up',
  );
  process.exit(2);
}
const connection = await Connection.connect({ address: cp.temporalAddress });
const client = new Client({ connection, namespace: namespace ?? cp.testTemporalNamespace });
const history = await client.workflow.getHandle(workflowId).fetchHistory();
const object = proto.temporal.api.history.v1.History.toObject(
  proto.temporal.api.history.v1.History.fromObject(history),
  { longs: String, enums: String, bytes: String },
);
writeFileSync(out, `${JSON.stringify(object, null, 1)}\n`);
console.log(`${out}: ${history.events?.length ?? 0} events of ${workflowId}`);
await connection.close();
