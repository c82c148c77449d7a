/** JSON text as Go's encoder writes it (k8s/go-json.ts): what a JSON patch's `test` of a string is compared with. */
import { goEscaped } from '../../k8s/go-json.js';

it.each([
  ['result < 0.05 && x > 1', '"result \\u003c 0.05 \\u0026\\u0026 x \\u003e 1"'],
  ['a\u2028b\u2029c', '"a\\u2028b\\u2029c"'],
  ['é → "q" \\ \b\f\n\t\u0001', JSON.stringify('é → "q" \\ \b\f\n\t\u0001')],
])('%j is sent as %s, the same text once read back', (text, sent) => {
  expect(goEscaped(JSON.stringify(text))).toBe(sent);
  expect(JSON.parse(goEscaped(JSON.stringify({ ops: [{ value: text }] })))).toEqual({ ops: [{ value: text }] });
});
