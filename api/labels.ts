/**
 * Label values that stand for things which are not valid label values themselves.
 *
 * ADR-0013's selector example puts a raw vector (`common.konfidence.cloud/example/vector:0.0.1`) into
 * matchLabels, but label values allow only [A-Za-z0-9._-] and at most 63 characters: such a selector
 * could never match. StageVersions are therefore labelled with `vectorLabelValue(vector)`, and
 * selectors must use the same function.
 */
import { createHash } from 'node:crypto';

export const LABEL_VALUE_PATTERN = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export function vectorLabelValue(vector: string): string {
  const cleaned = vector.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  if (cleaned.length <= 63) return cleaned;
  // Keep the readable head and make the value unique with a hash of the whole vector.
  const hash = createHash('sha256').update(vector).digest('hex').slice(0, 10);
  return `${cleaned.slice(0, 52).replace(/[^A-Za-z0-9]+$/, '')}-${hash}`;
}
