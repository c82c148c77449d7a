/**
 * The compiled layout the image runs (Dockerfile: `node dist/worker/main.js ROLE`), built by
 * `npm run build` (tsc -p tsconfig.build.json, about 10 s). Tests and benchmarks that run a
 * component as its Pod does build it first, so they measure and check what ships.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { repoRoot } from './env/paths.js';

export const distMain = join(repoRoot, 'dist', 'worker', 'main.js');

/** The image's ENTRYPOINT (Dockerfile; test/unit/image.test.ts holds the two together). */
export const IMAGE_ENTRYPOINT = ['node', 'dist/worker/main.js'] as const;

/** Compiles the runtime sources into dist/; throws with tsc's output when they do not compile. */
export function buildDist(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(repoRoot, 'tsconfig.build.json')], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * The Node flags a Deployment's container puts before the entry point: its `command`, when it
 * replaces the image's ENTRYPOINT (`node dist/worker/main.js`) to add flags NODE_OPTIONS refuses.
 * Tests and benchmarks run a role with them, as its Pod does.
 */
export function nodeFlagsOf(container: { command?: string[] }): string[] {
  const command = container.command;
  if (!command) return [];
  if (
    command[0] !== IMAGE_ENTRYPOINT[0] ||
    command.at(-1) !== IMAGE_ENTRYPOINT[1] ||
    command.slice(1, -1).some((f) => !f.startsWith('--'))
  ) {
    throw new Error(
      `a container's command must be "node [--flags] dist/worker/main.js" (the image's entry point), not "${command.join(' ')}"`,
    );
  }
  return command.slice(1, -1);
}
