/**
 * Which of two activations of a Stage is newer: one rule, which the Stage lock (stage-lock/rules.ts),
 * the watcher's supersede decisions (decisions/supersede.ts) and an activation's own order checks
 * (decisions/activation.ts) all ask. Pure; table-tested in test/unit/lock-rules.test.ts.
 */

/** What decides which of two activations of a Stage is newer. */
export interface Candidate {
  /** Revision of the StageVersion it activates. */
  revision: number;
  /**
   * When it came, as the side deciding knows it: the watcher has the creation time (RFC 3339, so it
   * sorts as text), the lock only the order it hears requests in.
   */
  came: string | number;
  /** Breaks a tie of `came`: creation times have one-second resolution. */
  name?: string;
}

/**
 * The one rule of which activation is newer: the higher StageVersion revision; on equal revisions
 * the one that came later, as a later kubectl apply would; then the name.
 */
export function newer(a: Candidate, b: Candidate): boolean {
  if (a.revision !== b.revision) return a.revision > b.revision;
  if (a.came !== b.came) return a.came > b.came;
  return (a.name ?? '') > (b.name ?? '');
}

/** The rule where only revisions are known (a StageVersion against another): strictly the higher one. */
export const newerRevision = (a: number, b: number): boolean =>
  newer({ revision: a, came: 0 }, { revision: b, came: 0 });
