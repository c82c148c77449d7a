/**
 * A JSON pointer (RFC 6901) for a JSON patch: each key escaped ("~" as "~0", "/" as "~1"), so that
 * an annotation key such as konfidence.cloud/serving-stage names one member. Pure: workflow code uses it too.
 */
export const jsonPointer = (...keys: string[]): string =>
  keys.map((k) => `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/** The pointer to a member under `path`, a pointer already. */
export const pointerUnder = (path: string, key: string): string => `${path}${jsonPointer(key)}`;
