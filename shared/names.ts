/**
 * Names and label values of the objects the project creates, derived from user names so that every
 * create is repeatable (a retried activity finds the object it made). Each function returns a valid
 * value for every valid input: object names up to 253 characters, label values and DNS labels up
 * to 63, shortened with a hash of the whole input so that different inputs stay different.
 * Pure: workflow code uses it too.
 */
const MAX_NAME = 253;
const MAX_LABEL = 63;

/** FNV-1a, enough to keep shortened names apart; workflow code has no node:crypto. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(36).padStart(7, '0').slice(0, 7);
}

/** A DNS-1123 subdomain (object name) from parts joined by '-'. */
export function joinName(...parts: (string | number)[]): string {
  const name = parts
    .join('-')
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, '-');
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, MAX_NAME - 8).replace(/[-.]+$/, '')}-${hash(name)}`;
}

/** A label value (≤ 63, [A-Za-z0-9._-], alphanumeric at both ends) that stands for `name`. */
export function labelValue(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  if (cleaned === name && name.length <= MAX_LABEL) return name;
  const head = cleaned.slice(0, MAX_LABEL - 8).replace(/[^A-Za-z0-9]+$/, '');
  return head ? `${head}-${hash(name)}` : hash(name);
}

/** A DNS-1123 label (≤ 63, [a-z0-9-]) that stands for `name`: step names, task queue parts. */
export function dnsLabelOf(name: string): string {
  const cleaned = name
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '');
  if (cleaned === name && name.length <= MAX_LABEL) return name;
  const suffix = hash(name);
  const head = cleaned.slice(0, MAX_LABEL - 8).replace(/-+$/, '');
  return head ? `${head}-${suffix}` : suffix;
}

export const activationUsageName = (activation: string) => joinName(activation, 'activation');
export const activeUsageName = (stage: string) => joinName(stage, 'active');
export const targetUsageName = (stage: string) => joinName(stage, 'target');
export const stageLeaseName = (stage: string) => joinName('konfidence-stage', stage);

/**
 * The ActivationExecution of one task: of step `step`, in attempt `attempt`, at the progression's
 * weight round `round` (0: the first, or the only one, which carries no round).
 */
export function executionName(
  activation: string,
  step: number,
  registration: string,
  attempt: number,
  revert = false,
  round = 0,
): string {
  return joinName(
    activation,
    step,
    ...(round > 0 ? [`w${round}`] : []),
    registration,
    ...(attempt > 1 ? [`r${attempt}`] : []),
    ...(revert ? ['revert'] : []),
  );
}
