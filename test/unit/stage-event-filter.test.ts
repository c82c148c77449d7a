/**
 * Which watch events cost the Stage controller a pass, and how soon (controllers/stage/filter.ts):
 * a switch's marks and usages, written milliseconds apart, are decided on by one pass (one write of
 * the Stage's status), a route's change a moment later, and a change a pass does not read by none.
 */
import { PASS_DELAY_MS, ROUTE_PASS_DELAY_MS, StageEventFilter } from '../../controllers/stage/filter.js';
import { RouteReaders } from '../../controllers/stage/route-readers.js';
import { ANNOTATION_SERVING } from '../../api/group.js';
import type { CustomObject } from '../../k8s/custom-objects.js';

const stageVersion = (annotations: Record<string, string>, status: Record<string, unknown> = {}): CustomObject => ({
  apiVersion: 'landscape.konfidence.cloud/v1alpha1',
  kind: 'StageVersion',
  metadata: { name: 'shop-2', namespace: 'team-a', uid: 'sv-uid', generation: 1, annotations },
  spec: { stage: 'shop', vector: 'shop:2', revision: 2 },
  status,
});

const route = (weight: number): CustomObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: 'shop', namespace: 'gateways', uid: 'route-uid', generation: weight },
  spec: { rules: [{ backendRefs: [{ name: 'shop-2', weight }] }] },
});

it("a StageVersion's mark: its namespace's pass comes after PASS_DELAY_MS, so the switch's other writes join it; the same state again costs none", () => {
  const filter = new StageEventFilter(new RouteReaders());
  expect(filter.passesFor('ADDED', stageVersion({}))).toEqual({ namespaces: ['team-a'], delayMs: PASS_DELAY_MS });
  expect(filter.passesFor('MODIFIED', stageVersion({ [ANNOTATION_SERVING]: 'shop' }))).toEqual({
    namespaces: ['team-a'],
    delayMs: PASS_DELAY_MS,
  });
  // Only its status changed: nothing a pass reads.
  expect(
    filter.passesFor('MODIFIED', stageVersion({ [ANNOTATION_SERVING]: 'shop' }, { message: 'in use' })),
  ).toBeUndefined();
  expect(PASS_DELAY_MS).toBeLessThan(ROUTE_PASS_DELAY_MS);
});

it("a route's change: a pass of its own namespace and of every namespace whose Stages read it, after ROUTE_PASS_DELAY_MS", () => {
  const readers = new RouteReaders();
  readers.add('team-a', 'gateway.networking.k8s.io/HTTPRoute/gateways/shop');
  const filter = new StageEventFilter(readers);
  expect(filter.passesFor('ADDED', route(10))).toEqual({
    namespaces: ['gateways', 'team-a'],
    delayMs: ROUTE_PASS_DELAY_MS,
  });
  expect(filter.passesFor('MODIFIED', route(10))).toBeUndefined();
  expect(filter.passesFor('MODIFIED', route(50))?.namespaces).toEqual(['gateways', 'team-a']);
});

it('a deletion always costs a pass, and the object is forgotten: seen again, it is new', () => {
  const filter = new StageEventFilter(new RouteReaders());
  const object = stageVersion({ [ANNOTATION_SERVING]: 'shop' });
  filter.passesFor('ADDED', object);
  expect(filter.passesFor('DELETED', object)?.namespaces).toEqual(['team-a']);
  expect(filter.passesFor('ADDED', object)?.namespaces).toEqual(['team-a']);
});
