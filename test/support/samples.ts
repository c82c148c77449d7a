/** The sample objects of test/samples/valid.yaml, deep-copied so tests can change them freely. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export interface Sample {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec: Record<string, any>;
  status?: Record<string, any>;
}

const path = fileURLToPath(new URL('../samples/valid.yaml', import.meta.url));
const all = parseAllDocuments(readFileSync(path, 'utf8')).map((d) => d.toJS() as Sample);

export function validSamples(): Sample[] {
  return structuredClone(all);
}

export function sample(kind: string, name?: string): Sample {
  const found = all.find((s) => s.kind === kind && (name === undefined || s.metadata.name === name));
  if (!found) throw new Error(`no sample ${kind}/${name ?? '*'} in test/samples/valid.yaml`);
  return structuredClone(found);
}

/** A sample with its spec changed by `edit`, under a name of its own. */
export function variant(kind: string, name: string, edit: (spec: Record<string, any>) => void): Sample {
  const s = sample(kind);
  s.metadata = { name };
  edit(s.spec);
  return s;
}
