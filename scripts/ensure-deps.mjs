// Runs before npm start and npm test: installs the npm packages when they are missing or older
// than package-lock.json, so a fresh clone needs no separate `npm ci`. Plain Node, no packages.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const lock = `${root}/package-lock.json`;
const installed = `${root}/node_modules/.package-lock.json`;
if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  console.error('installing npm packages (npm ci)...');
  execSync('npm ci --no-audit --no-fund', { cwd: root, stdio: 'inherit' });
}
