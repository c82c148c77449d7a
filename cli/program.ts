/** How the CLI was called, for help texts and hints: kubectl runs plugins as kubectl-NAME. */
import { basename } from 'node:path';

export function programName(argv1: string | undefined): string {
  return argv1 && basename(argv1).startsWith('kubectl-') ? 'kubectl konfidence' : 'konfidence';
}
