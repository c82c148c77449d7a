/** crds/ is generated from the zod schemas in api/ and must not drift from them. */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { allKinds } from '../api/index.js';
import { crdDir } from '../k8s/crds.js';
import { parse } from 'yaml';
import { KUSTOMIZATION, renderCrds } from '../scripts/crds.js';

describe('generated CRDs', () => {
  const rendered = renderCrds(allKinds);

  it('are committed exactly as the generator writes them (else: npm run crds:generate)', () => {
    const committed = readdirSync(crdDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(committed).toEqual([...rendered.keys()].sort());
    for (const [file, text] of rendered) {
      expect({ file, text: readFileSync(join(crdDir, file), 'utf8') }).toEqual({ file, text });
    }
  });

  it('are listed in crds/kustomization.yaml, which deploy/ includes (every generated file, nothing else)', () => {
    const listed = (parse(rendered.get(KUSTOMIZATION)!) as { resources: string[] }).resources;
    expect(listed).toEqual([...rendered.keys()].filter((f) => f !== KUSTOMIZATION).sort());
  });

  it('carry every CEL rule of the zod schemas', () => {
    const rules = [...rendered.values()].join('\n').match(/- rule: /g) ?? [];
    // Cross-field rules and immutability rules: see api/*.ts for each one's zod twin.
    expect(rules.length).toBeGreaterThanOrEqual(10);
  });
});
