#!/usr/bin/env node
// Launcher of the konfidence CLI (package bin `konfidence`, and `kubectl-konfidence` for kubectl's
// plugin discovery): runs cli/main.ts in this process through tsx (a dependency), from the sources.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
