/**
 * The image and the Deployments agree on how a role starts: the Dockerfile's ENTRYPOINT is the one
 * scripts/dist.ts knows, and a Deployment that sets a command only adds Node flags to it (tests
 * and benchmarks run roles with those flags, as their Pods do).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { IMAGE_ENTRYPOINT, nodeFlagsOf } from '../../scripts/dist.js';
import { repoRoot } from '../../scripts/env/paths.js';

type Container = { name: string; command?: string[] };

function containers(dir: string): { file: string; container: Container }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return containers(path);
    if (!e.name.endsWith('.yaml')) return [];
    return parseAllDocuments(readFileSync(path, 'utf8')).flatMap((doc) => {
      const o = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Container[] } } } } | null;
      return o?.kind === 'Deployment'
        ? (o.spec?.template?.spec?.containers ?? []).map((container) => ({ file: path, container }))
        : [];
    });
  });
}

test("the Dockerfile's ENTRYPOINT is the entry point a Deployment's command adds flags to", () => {
  const line = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('ENTRYPOINT '));
  expect(JSON.parse(line!.slice('ENTRYPOINT '.length))).toEqual([...IMAGE_ENTRYPOINT]);
});

test('every Deployment command is node, Node flags, and the entry point; the informer roles save memory with it', () => {
  const all = containers(join(repoRoot, 'deploy'));
  const flags = new Map(all.map(({ file, container }) => [relative(repoRoot, file), nodeFlagsOf(container)]));
  expect(flags.get('deploy/base/workloads/elected/watcher.yaml')).toEqual(['--optimize-for-size']);
  expect(flags.get('deploy/base/workloads/elected/stage-controller.yaml')).toEqual(['--optimize-for-size']);
  expect(flags.get('deploy/base/workloads/core.yaml')).toEqual([]);
});

test('a command that is not the entry point with flags is refused with what it must be', () => {
  expect(() => nodeFlagsOf({ command: ['node', 'other.js'] })).toThrow(
    /must be "node \[--flags\] dist\/worker\/main.js"/,
  );
  expect(() => nodeFlagsOf({ command: ['sh', '-c', 'node dist/worker/main.js'] })).toThrow(/the image's entry point/);
  expect(nodeFlagsOf({})).toEqual([]);
});

test('the image names the workflow bundle `npm run build` writes: its core worker starts without bundling', () => {
  const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8').split('\n');
  const workdir = dockerfile
    .filter((l) => l.startsWith('WORKDIR '))
    .at(-1)!
    .slice('WORKDIR '.length);
  const env = dockerfile
    .find((l) => l.startsWith('ENV KONFIDENCE_WORKFLOW_BUNDLE='))
    ?.slice('ENV KONFIDENCE_WORKFLOW_BUNDLE='.length);
  const build: string = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).scripts.build;
  const written = /worker\/workflow-bundle\.js (\S+)$/.exec(build)?.[1];
  expect(written).toBe('dist/workflow-bundle.js');
  expect(env).toBe(`${workdir}/${written}`);
});
