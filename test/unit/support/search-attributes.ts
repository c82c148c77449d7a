/**
 * The activation workflow upserts the project's search attributes (Stage, ActivationPhase, …); the
 * time-skipping test server fails its workflow task with BadSearchAttributes unless they are
 * registered, as a production namespace must have them (README, "Running against a real cluster").
 */
import proto from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { searchAttributes } from '../../../shared/search-attributes.js';

// @temporalio/proto is CommonJS whose named exports Node's ESM loader cannot see.
const { IndexedValueType } = proto.temporal.api.enums.v1;
const indexedType: Record<string, proto.temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TEXT: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
};

export async function registerSearchAttributes(env: TestWorkflowEnvironment): Promise<void> {
  await env.connection.operatorService.addSearchAttributes({
    namespace: env.namespace ?? 'default',
    searchAttributes: Object.fromEntries(searchAttributes.map((a) => [a.name, indexedType[a.type]!])),
  });
}
