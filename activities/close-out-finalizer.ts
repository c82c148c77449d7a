/**
 * The close-out finalizer of a VectorActivation (FINALIZER_CLOSE_OUT): set before its run's first
 * route change, taken away once the run has ended (its final status written). While it is set a
 * deletion waits, and the executions it owns, whose records say what to put back, stay.
 */
import { FINALIZER_CLOSE_OUT } from '../api/group.js';
import { apiStatus } from '../k8s/client.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import type { ActivationRef } from '../shared/activation.js';
import type { CoreDeps } from './deps.js';

/** A JSON patch's `test` failed (someone changed the finalizers meanwhile): read again, a few times. */
const TRIES = 4;

export function closeOutFinalizerActivities({ objects }: CoreDeps) {
  /** Changes the finalizers of the object, by a JSON patch conditional on what was read; false when it is gone. */
  async function change(
    ref: ActivationRef,
    read: CustomObject | undefined,
    patchOf: (finalizers: string[] | undefined, resourceVersion: string | undefined) => object[] | undefined,
  ): Promise<boolean> {
    let va = read;
    for (let i = 0; ; i++) {
      va ??= await objects.get('VectorActivation', ref.namespace, ref.name);
      if (!va || va.metadata.uid !== ref.uid) return false;
      const ops = patchOf(va.metadata.finalizers, va.metadata.resourceVersion);
      if (!ops) return true;
      try {
        return await objects.jsonPatch('VectorActivation', ref.namespace, ref.name, [
          { op: 'test', path: '/metadata/uid', value: ref.uid },
          ...ops,
        ]);
      } catch (err) {
        if (apiStatus(err) !== 422 || i === TRIES - 1) throw err;
        va = undefined;
      }
    }
  }

  return {
    /**
     * Sets the finalizer (nothing when set already). False when the object is gone or being
     * deleted (the apiserver takes no new finalizer then). One request, with no read, when the
     * object has no finalizers, as an activation's usually has: a `test` of the list for null
     * passes only while there is none. Otherwise it reads and adds to the list as found.
     */
    async addCloseOutFinalizer(ref: ActivationRef): Promise<boolean> {
      try {
        const none = [
          { op: 'test', path: '/metadata/finalizers', value: null },
          { op: 'add', path: '/metadata/finalizers', value: [FINALIZER_CLOSE_OUT] },
        ];
        return await objects.jsonPatch('VectorActivation', ref.namespace, ref.name, [
          { op: 'test', path: '/metadata/uid', value: ref.uid },
          ...none,
        ]);
      } catch (err) {
        if (apiStatus(err) !== 422) throw err;
      }
      const va = await objects.get('VectorActivation', ref.namespace, ref.name);
      if (!va || va.metadata.deletionTimestamp) return false;
      return change(ref, va, (f, resourceVersion) => {
        if (f?.includes(FINALIZER_CLOSE_OUT)) return undefined;
        if (f)
          return [
            { op: 'test', path: '/metadata/finalizers', value: f },
            { op: 'add', path: '/metadata/finalizers/-', value: FINALIZER_CLOSE_OUT },
          ];
        // No list yet: adding one would replace a list someone added meanwhile, so only if nothing changed.
        return [
          { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
          { op: 'add', path: '/metadata/finalizers', value: [FINALIZER_CLOSE_OUT] },
        ];
      });
    },

    /**
     * Takes the finalizer away (nothing when it is not set). One request, with no read, when it is
     * the object's only finalizer, as it usually is; otherwise (or given `read`) from the list as found.
     */
    async removeCloseOutFinalizer(ref: ActivationRef, read?: CustomObject): Promise<boolean> {
      if (!read) {
        try {
          const only = [
            { op: 'test', path: '/metadata/finalizers', value: [FINALIZER_CLOSE_OUT] },
            { op: 'remove', path: '/metadata/finalizers' },
          ];
          return await objects.jsonPatch('VectorActivation', ref.namespace, ref.name, [
            { op: 'test', path: '/metadata/uid', value: ref.uid },
            ...only,
          ]);
        } catch (err) {
          if (apiStatus(err) !== 422) throw err;
        }
      }
      return change(ref, read, (f) => {
        const i = f?.indexOf(FINALIZER_CLOSE_OUT) ?? -1;
        return i < 0
          ? undefined
          : [
              { op: 'test', path: `/metadata/finalizers/${i}`, value: FINALIZER_CLOSE_OUT },
              { op: 'remove', path: `/metadata/finalizers/${i}` },
            ];
      });
    },
  };
}
