/** Plain-text tables and times as the CLI prints them. Pure: tested in test/unit/cli-table.test.ts. */

/** Columns padded to their widest cell, two spaces apart, like kubectl get; empty cells show "-". */
export function formatTable(header: string[], rows: (string | number | undefined)[][]): string {
  const cells = [
    header,
    ...rows.map((r) => header.map((_, i) => (r[i] === undefined || r[i] === '' ? '-' : String(r[i])))),
  ];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** 0s, 45s, 1m05s, 2h03m: short and sortable by eye. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}

/** Milliseconds between two apiserver timestamps, or undefined when one is missing. */
export function between(start: string | Date | undefined, end: string | Date | undefined): number | undefined {
  if (!start || !end) return undefined;
  const ms = new Date(end).getTime() - new Date(start).getTime();
  return Number.isFinite(ms) ? ms : undefined;
}

/** A timestamp as RFC 3339 UTC seconds (what kubectl -o yaml shows); the client library may hand Dates. */
export function formatTime(t: string | Date | undefined): string | undefined {
  if (!t) return undefined;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toISOString().replace(/\.\d+Z$/, 'Z');
}
