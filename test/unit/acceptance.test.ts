/** A Gateway API implementation's word on an HTTPRoute generation (executors/gateway-api/acceptance.ts parentVerdict), by a table. No servers. */
import { parentVerdict, type RouteStatus, type ServedParent } from '../../executors/gateway-api/acceptance.js';

const parent: ServedParent = {
  ref: { name: 'local', namespace: 'gw' },
  controllerName: 'traefik.io/gateway-controller',
};
const condition = (type: string, status: string, observedGeneration: number, message = '') => ({
  type,
  status,
  reason: status === 'True' ? type : 'BackendNotFound',
  message,
  observedGeneration,
});
const report = (
  generation: number,
  resolved = 'True',
  extra: Partial<RouteStatus['parents'] extends (infer P)[] | undefined ? P : never> = {},
): RouteStatus => ({
  parents: [
    {
      parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'local', namespace: 'gw' },
      controllerName: 'traefik.io/gateway-controller',
      conditions: [
        condition('Accepted', 'True', generation),
        condition('ResolvedRefs', resolved, generation, resolved === 'True' ? '' : 'service "shop-v2" not found'),
      ],
      ...extra,
    },
  ],
});

describe('parentVerdict: the implementation serving a parent has its word on the generation written', () => {
  it.each<[string, RouteStatus | undefined, number, ReturnType<typeof parentVerdict>]>([
    ['no status yet: waiting', undefined, 3, { state: 'waiting' }],
    ['a report of an older generation: still waiting', report(2), 3, { state: 'waiting' }],
    ['accepted and resolved for it: accepted', report(3), 3, { state: 'accepted' }],
    ['a later generation (someone wrote after us) counts too', report(4), 3, { state: 'accepted' }],
    [
      'a backend it cannot resolve: refused, in its own words',
      report(3, 'False'),
      3,
      { state: 'refused', message: 'ResolvedRefs False (BackendNotFound): service "shop-v2" not found' },
    ],
    [
      "another controller's entry says nothing of this one",
      report(3, 'True', { controllerName: 'example.com/other' }),
      3,
      { state: 'waiting' },
    ],
    [
      'an entry for another parent says nothing of this one',
      report(3, 'True', { parentRef: { name: 'other', namespace: 'gw' } }),
      3,
      { state: 'waiting' },
    ],
    [
      'only the condition that fails reported (not allowed by the listeners): refused at once',
      report(3, 'True', {
        conditions: [
          {
            type: 'Accepted',
            status: 'False',
            reason: 'NotAllowedByListeners',
            message: 'no listener admits the route',
            observedGeneration: 3,
          },
        ],
      }),
      3,
      { state: 'refused', message: 'Accepted False (NotAllowedByListeners): no listener admits the route' },
    ],
    [
      'accepted, its backends not yet reported: still waiting',
      report(3, 'True', { conditions: [condition('Accepted', 'True', 3)] }),
      3,
      { state: 'waiting' },
    ],
  ])('%s', (_n, status, generation, verdict) =>
    expect(parentVerdict(status, parent, 'shop', generation)).toEqual(verdict),
  );
});
