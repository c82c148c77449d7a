/**
 * Apiserver requests of plain JSON on node:http(s), prepared by the KubeConfig as the generated
 * APIs' calls are (credentials, its shared keep-alive agent, a deadline). The hot path (custom
 * resources, routes, Events) goes this way instead of through the client's generated APIs, which
 * pass every call through rxjs, their middleware chain, node-fetch and their ObjectSerializer: a
 * tenth to a fifth more of our CPU per request (`npx tsx bench/request-cost.ts`), some 30 requests
 * an activation. A refused request throws the client's own ApiException, so callers tell its
 * status apart as before (apiStatus). An apiserver answers the requests sent here itself: a
 * redirect is not followed (it is refused like any status but 2xx), and a gzipped answer (a large
 * list) is unzipped.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { gunzipSync } from 'node:zlib';
import { k8s } from './client.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The media types of the two patches sent here. */
export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';

export interface JsonRequest {
  method: Method;
  /** The path under the server's URL, its segments already encoded (see `pathOf`). */
  path: string;
  query?: Record<string, string | undefined>;
  /** JSON text, sent as it is (a JSON patch's body is Go-escaped by its caller). */
  body?: string;
  /** The body's media type: JSON unless a patch says which. */
  contentType?: string;
}

/** A path from its segments, each encoded as one segment of a URL. */
export const pathOf = (...parts: string[]) => '/' + parts.map(encodeURIComponent).join('/');

/** The path of a namespaced custom resource's collection, object or subresource. */
export function customObjectPath(
  group: string,
  version: string,
  plural: string,
  namespace: string,
  name?: string,
  subresource?: string,
): string {
  const rest = [name, subresource].filter((part): part is string => part !== undefined);
  return pathOf('apis', group, version, 'namespaces', namespace, plural, ...rest);
}

export class JsonRequests {
  constructor(private readonly kc: k8s.KubeConfig) {}

  /** The answer's JSON (a deletion's may be undefined); a status other than 2xx throws ApiException. */
  async send<T>(request: JsonRequest): Promise<T> {
    const server = this.kc.getCurrentCluster()?.server;
    if (!server) throw new Error('the kubeconfig names no cluster to send a request to');
    const context = new k8s.RequestContext(server.replace(/\/$/, '') + request.path, request.method as k8s.HttpMethod);
    for (const [key, value] of Object.entries(request.query ?? {}))
      if (value !== undefined) context.setQueryParam(key, value);
    context.setHeaderParam('Accept', 'application/json');
    context.setHeaderParam('Accept-Encoding', 'gzip');
    if (request.body !== undefined) {
      context.setHeaderParam('Content-Type', request.contentType ?? 'application/json');
      context.setHeaderParam('Content-Length', String(Buffer.byteLength(request.body)));
    }
    // Where the generated APIs' calls pass too: credentials, the shared agent and the deadline
    // (k8s/client.ts), a role's user agent, a write fence (k8s/leader-election.ts).
    await this.kc.applySecurityAuthentication(context);
    const { status, text, headers } = await exchange(context, request.body);
    // The body as text, as the generated APIs give it (statusMessage reads either).
    if (status < 200 || status > 299) throw new k8s.ApiException(status, `HTTP ${status}`, text, headers);
    return answerOf(request, status, text, headers) as T;
  }
}

function exchange(
  context: k8s.RequestContext,
  body: string | undefined,
): Promise<{ status: number; text: string; headers: Record<string, string> }> {
  const url = new URL(context.getUrl());
  const transport = url.protocol === 'http:' ? http : https;
  const options: https.RequestOptions = {
    method: context.getHttpMethod(),
    headers: context.getHeaders(),
    agent: context.getAgent() as http.Agent | undefined,
    signal: context.getSignal() as AbortSignal | undefined,
  };
  return new Promise((resolve, reject) => {
    const request = transport.request(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [key, value] of Object.entries(response.headers))
          if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value;
        try {
          const raw = Buffer.concat(chunks);
          const unzipped = headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
          resolve({ status: response.statusCode ?? 0, text: unzipped.toString('utf8'), headers });
        } catch (err) {
          reject(err);
        }
      });
    });
    // A deadline passed is an AbortError, as the generated APIs' is (apiMessage says so).
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * The answer's JSON. Only a deletion may answer nothing; any other answer that is not JSON (a
 * proxy's page in front of the apiserver) throws, rather than reading as an object that is gone.
 */
function answerOf(request: JsonRequest, status: number, text: string, headers: Record<string, string>): unknown {
  if (!text && request.method === 'DELETE') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    const type = headers['content-type'] ?? 'no content type';
    throw new Error(
      `${request.method} ${request.path}: the apiserver answered ${status} with ${type}, not JSON: ${JSON.stringify(text.slice(0, 200))}`,
    );
  }
}
