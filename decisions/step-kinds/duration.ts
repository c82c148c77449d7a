/** A duration as a gate's message says it: 90 → "90s", 3600 → "1h", 259200 → "3d". */
export function seconds(total: number): string {
  if (total % 86400 === 0) return `${total / 86400}d`;
  if (total % 3600 === 0) return `${total / 3600}h`;
  if (total % 60 === 0) return `${total / 60}m`;
  return `${total}s`;
}
