/**
 * The project's custom resources as plain JSON (no client-side models that could drop fields), sent
 * by k8s/json-requests.ts. Every helper is safe to repeat: create tolerates "exists", delete "gone".
 */
import { GROUP, VERSION } from '../api/group.js';
import { allKinds } from '../api/index.js';
import { apiStatus, type k8s } from './client.js';
import { goEscaped } from './go-json.js';
import { customObjectPath, JSON_PATCH, JsonRequests, MERGE_PATCH, pathOf } from './json-requests.js';

export interface CustomObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: {
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
      blockOwnerDeletion?: boolean;
    }[];
    deletionTimestamp?: string;
    creationTimestamp?: string;
  };
  spec?: any;
  status?: any;
}

/** The resource (plural) name of one of the project's kinds. */
export function pluralOf(kind: string): string {
  const def = allKinds.find((k) => k.kind === kind);
  if (!def) throw new Error(`unknown kind ${kind}`);
  return def.plural;
}

export class CustomObjects {
  private readonly requests: JsonRequests;

  constructor(kc: k8s.KubeConfig) {
    this.requests = new JsonRequests(kc);
  }

  private path(kind: string, namespace: string, name?: string, subresource?: string): string {
    return customObjectPath(GROUP, VERSION, pluralOf(kind), namespace, name, subresource);
  }

  async get<T extends CustomObject = CustomObject>(
    kind: string,
    namespace: string,
    name: string,
  ): Promise<T | undefined> {
    try {
      return await this.requests.send<T>({ method: 'GET', path: this.path(kind, namespace, name) });
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  async list<T extends CustomObject = CustomObject>(
    kind: string,
    namespace: string,
    labelSelector?: string,
  ): Promise<T[]> {
    const res = await this.requests.send<{ items: T[] }>({
      method: 'GET',
      path: this.path(kind, namespace),
      query: { labelSelector },
    });
    return res.items;
  }

  async listAllNamespaces<T extends CustomObject = CustomObject>(kind: string): Promise<T[]> {
    const res = await this.requests.send<{ items: T[] }>({
      method: 'GET',
      path: pathOf('apis', GROUP, VERSION, pluralOf(kind)),
    });
    return res.items;
  }

  /** Creates the object, or returns the existing one of that name (a repeated create). */
  async create<T extends CustomObject = CustomObject>(
    object: T,
  ): Promise<{ object: CustomObject & T; created: boolean }> {
    const namespace = object.metadata.namespace!;
    try {
      const created = await this.requests.send<T>({
        method: 'POST',
        path: this.path(object.kind, namespace),
        body: JSON.stringify(object),
      });
      return { object: created, created: true };
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
      const existing = await this.get<T>(object.kind, namespace, object.metadata.name);
      if (!existing) throw err;
      return { object: existing, created: false };
    }
  }

  /**
   * Creates an object owned by `ownerUid` (one of its ownerReferences). An object of that name
   * that is a predecessor's (a VectorActivation deleted and re-created under the same name, whose
   * garbage has not been collected yet, or was orphaned) is deleted, by uid, and the create
   * repeated, so nothing of the predecessor is ever adopted: one owned by an object of the owner's
   * kind and name under another uid, or one owned by nobody that carries every label this create
   * gives. Anything else of that name is someone else's: it is left alone and the create refused
   * (NameTakenError).
   */
  async createOwned<T extends CustomObject = CustomObject>(
    object: T,
    ownerUid: string,
  ): Promise<{ object: CustomObject & T; created: boolean }> {
    const owner = object.metadata.ownerReferences?.find((o) => o.uid === ownerUid);
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await this.create(object);
      const owners = result.object.metadata.ownerReferences ?? [];
      if (result.created || owners.some((o) => o.uid === ownerUid)) return result;
      const labels = result.object.metadata.labels ?? {};
      const predecessor = owners.length
        ? owner !== undefined && owners.some((o) => o.kind === owner.kind && o.name === owner.name)
        : Object.entries(object.metadata.labels ?? {}).every(([k, v]) => labels[k] === v) &&
          Object.keys(object.metadata.labels ?? {}).length > 0;
      if (!predecessor) throw new NameTakenError(object, owner, owners);
      await this.delete(object.kind, object.metadata.namespace!, object.metadata.name, result.object.metadata.uid);
    }
    throw new Error(
      `${object.kind} ${object.metadata.namespace}/${object.metadata.name} of a predecessor is still there after five deletions`,
    );
  }

  /** Replaces the spec with a JSON merge patch (used for objects whose spec may change). */
  async mergeSpec(kind: string, namespace: string, name: string, spec: unknown): Promise<void> {
    if (!(await this.mergePatch(kind, namespace, name, { spec }, false)))
      throw new Error(`${kind} ${namespace}/${name} not found`);
  }

  /** Merge-patches labels, annotations or finalizers (null removes a key); false when the object is gone. */
  async mergeMetadata(
    kind: string,
    namespace: string,
    name: string,
    metadata: Record<string, unknown>,
  ): Promise<boolean> {
    return (await this.mergeMetadataOf(kind, namespace, name, metadata)) !== undefined;
  }

  /** mergeMetadata, answering the object as written (undefined when it is gone): no read after it. */
  mergeMetadataOf(
    kind: string,
    namespace: string,
    name: string,
    metadata: Record<string, unknown>,
  ): Promise<CustomObject | undefined> {
    return this.mergePatch(kind, namespace, name, { metadata }, false);
  }

  /**
   * Applies a JSON patch (RFC 6902) to the object: its `test` operations make it conditional in one
   * request (a failed test answers 422). False when the object is gone.
   */
  async jsonPatch(kind: string, namespace: string, name: string, operations: object[]): Promise<boolean> {
    return (await this.patch(kind, namespace, name, operations, JSON_PATCH, false)) !== undefined;
  }

  /**
   * Applies a JSON patch to the status subresource, answering the object as written (undefined
   * when it is gone). Only its status changes, but its `test`s see the whole object (metadata.uid).
   */
  jsonPatchStatus(
    kind: string,
    namespace: string,
    name: string,
    operations: object[],
  ): Promise<CustomObject | undefined> {
    return this.patch(kind, namespace, name, operations, JSON_PATCH, true);
  }

  /** Merge-patches the status subresource; false when the object is gone. */
  async patchStatus(kind: string, namespace: string, name: string, status: unknown): Promise<boolean> {
    return (await this.mergePatch(kind, namespace, name, { status }, true)) !== undefined;
  }

  /**
   * Merge-patches the status only if the object is still at `resourceVersion` (optimistic
   * concurrency): false when it is gone or someone wrote it since it was read.
   */
  async patchStatusAt(
    kind: string,
    namespace: string,
    name: string,
    resourceVersion: string,
    status: unknown,
  ): Promise<boolean> {
    try {
      return (
        (await this.mergePatch(kind, namespace, name, { metadata: { resourceVersion }, status }, true)) !== undefined
      );
    } catch (err) {
      if (apiStatus(err) === 409) return false;
      throw err;
    }
  }

  private mergePatch(
    kind: string,
    namespace: string,
    name: string,
    body: object,
    status: boolean,
  ): Promise<CustomObject | undefined> {
    return this.patch(kind, namespace, name, body, MERGE_PATCH, status);
  }

  /** The object as written; undefined when it is gone. */
  private async patch(
    kind: string,
    namespace: string,
    name: string,
    body: object,
    contentType: typeof JSON_PATCH | typeof MERGE_PATCH,
    status: boolean,
  ): Promise<CustomObject | undefined> {
    const text = JSON.stringify(body);
    try {
      return await this.requests.send<CustomObject>({
        method: 'PATCH',
        path: this.path(kind, namespace, name, status ? 'status' : undefined),
        // A JSON patch's `test`s compare strings byte for byte with the object as Go writes it.
        body: contentType === JSON_PATCH ? goEscaped(text) : text,
        contentType,
      });
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** Deletes the object (only if it still has `uid`, when given); gone already is fine. */
  async delete(kind: string, namespace: string, name: string, uid?: string): Promise<void> {
    try {
      await this.requests.send({
        method: 'DELETE',
        path: this.path(kind, namespace, name),
        ...(uid ? { body: JSON.stringify({ preconditions: { uid } }) } : {}),
      });
    } catch (err) {
      // 409: the uid precondition failed, the object is another one by now.
      if (apiStatus(err) !== 404 && !(uid && apiStatus(err) === 409)) throw err;
    }
  }
}

/** The name a controller gives an object it owns is taken by an object someone else owns: no retry frees it. */
export class NameTakenError extends Error {
  constructor(
    object: CustomObject,
    owner: { kind: string; name: string } | undefined,
    owners: { kind: string; name: string }[],
  ) {
    const whose = owners.length ? `owned by ${owners.map((o) => `${o.kind} ${o.name}`).join(', ')}` : 'owned by nobody';
    const forWhom = owner ? ` for ${owner.kind} ${owner.name}` : '';
    super(
      `${object.kind} ${object.metadata.namespace}/${object.metadata.name} exists and is not ours (${whose}); the name is the one konfidence-activation gives it${forWhom}, ` +
        'so it was left as it is: rename or delete that object, then retry',
    );
    this.name = 'NameTakenError';
  }
}
