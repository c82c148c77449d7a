/** shared/json-pointer.ts: an annotation key with "/" (and a "~") is one member of the pointer. */
import { jsonPointer, pointerUnder } from '../../shared/json-pointer.js';

it.each([
  [
    ['metadata', 'annotations', 'konfidence.cloud/serving-stage'],
    '/metadata/annotations/konfidence.cloud~1serving-stage',
  ],
  [['status', 'a~b/c'], '/status/a~0b~1c'],
])('%j → %s', (keys, expected) => expect(jsonPointer(...keys)).toBe(expected));

it('a member under a pointer', () =>
  expect(pointerUnder('/status/progression', 'x/y')).toBe('/status/progression/x~1y'));
