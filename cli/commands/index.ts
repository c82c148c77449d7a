/** Every command, in the order help lists them. */
import type { Command } from '../command.js';
import { activate } from './activate.js';
import { breaker } from './breaker.js';
import { history } from './history.js';
import { abort, approve, cancel, promote, retry } from './request.js';
import { rollout } from './rollout.js';
import { status } from './status.js';
import { watch } from './watch.js';

export const commands: Command[] = [
  status,
  activate,
  approve,
  promote,
  abort,
  cancel,
  retry,
  history,
  watch,
  rollout,
  breaker,
];
