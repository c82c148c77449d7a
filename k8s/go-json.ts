/**
 * JSON text as Go's encoder writes it. The apiserver's json-patch compares a `test`'s string with
 * the object's JSON byte for byte, and the object's JSON is Go's: <, > and & escaped as \u003c,
 * \u003e and \u0026, U+2028 and U+2029 as \u2028 and \u2029, where JSON.stringify writes them as
 * they are. A test of a string holding one of them (an analysis condition "result < 0.05" in a
 * message) passes only when sent the same way.
 */

/** `json` (JSON text, as JSON.stringify writes it) with its strings escaped as Go escapes them. */
export function goEscaped(json: string): string {
  // Outside strings JSON has none of these characters, and inside one none is part of an escape.
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
