/**
 * Names of the objects an activation creates, derived from its own name so that every create is
 * repeatable (a retried activity finds the object it made). Pure: workflow code uses it too.
 */
const MAX = 253;

/** FNV-1a, enough to keep shortened names apart; workflow code has no node:crypto. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36);
}

export function joinName(...parts: (string | number)[]): string {
  const name = parts.join('-').toLowerCase().replace(/[^a-z0-9.-]/g, '-');
  if (name.length <= MAX) return name;
  return `${name.slice(0, MAX - 8).replace(/[-.]+$/, '')}-${hash(name).slice(0, 7)}`;
}

export const activationUsageName = (activation: string) => joinName(activation, 'activation');
export const activeUsageName = (stage: string) => joinName(stage, 'active');
export const targetUsageName = (stage: string) => joinName(stage, 'target');
export const stageLeaseName = (stage: string) => joinName('konfidence-stage', stage);

export function executionName(activation: string, step: number, registration: string, attempt: number, revert = false): string {
  return joinName(activation, step, registration, ...(attempt > 1 ? [`r${attempt}`] : []), ...(revert ? ['revert'] : []));
}
