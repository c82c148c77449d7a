/**
 * The route CRDs as their projects publish them, so that the executors are tested against the real
 * schemas (CEL rules, defaults) and not a hand-written subset: the Gateway API's standard channel
 * (HTTPRoute, and the kinds the local gateway watches beside it: GatewayClass, Gateway, GRPCRoute,
 * ReferenceGrant, BackendTLSPolicy) from the Go module sigs.k8s.io/gateway-api, VirtualService and
 * DestinationRule from istio.io/api, at the versions pinned in scripts/versions.env. `go mod download` fetches a module from the Go module proxy into
 * the module cache; the documents we need are copied to a cache keyed by version, outside any clone
 * (like the binaries), so a warm machine reads files and a fresh one fetches on first use.
 *
 * `tsx scripts/route-crds.ts` fetches ahead (scripts/install-binaries.sh runs it) and prints the folders.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import type { k8s } from '../k8s/client.js';
import { readCrdFiles } from '../k8s/crds.js';
import { versions } from './env/paths.js';

export const crdCache =
  process.env.KONFIDENCE_CRD_CACHE ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'konfidence-activation', 'crds');

interface Source {
  module: string;
  /** Key of the pinned version in scripts/versions.env. */
  versionKey: string;
  /** Files in the module, each with the CRDs (by metadata.name) to take from it. */
  files: Record<string, string[]>;
}

const SOURCES: Source[] = [
  {
    module: 'sigs.k8s.io/gateway-api',
    versionKey: 'GATEWAY_API_VERSION',
    files: Object.fromEntries(
      ['httproutes', 'gatewayclasses', 'gateways', 'grpcroutes', 'referencegrants', 'backendtlspolicies'].map(
        (plural) => [
          `config/crd/standard/gateway.networking.k8s.io_${plural}.yaml`,
          [`${plural}.gateway.networking.k8s.io`],
        ],
      ),
    ),
  },
  {
    module: 'istio.io/api',
    versionKey: 'ISTIO_API_VERSION',
    files: {
      'kubernetes/customresourcedefinitions.gen.yaml': [
        'virtualservices.networking.istio.io',
        'destinationrules.networking.istio.io',
      ],
    },
  },
];

function pinned(source: Source): string {
  const v = versions[source.versionKey];
  if (!v) throw new Error(`scripts/versions.env lacks ${source.versionKey} (the pinned version of ${source.module})`);
  return v;
}

/** The module's folder in the Go module cache, downloaded from the module proxy if needed. */
function moduleDir(module: string, version: string): string {
  let out: string;
  try {
    // Outside any go.mod: a plain download of one module version.
    out = execFileSync('go', ['mod', 'download', '-json', `${module}@${version}`], {
      cwd: tmpdir(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    const e = err as { stdout?: string; message: string };
    const reported = e.stdout ? (safeParse(e.stdout)?.Error as string | undefined) : undefined;
    throw new Error(
      `go mod download ${module}@${version} failed: ${reported ?? e.message} (Go and the Go module proxy are needed once per version)`,
    );
  }
  return safeParse(out)!.Dir as string;
}

function safeParse(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Fetches one source into its cache folder (whole or not at all); returns the folder. */
function fetchSource(source: Source): string {
  const version = pinned(source);
  const dest = join(crdCache, `${source.module.replaceAll('/', '_')}@${version}`);
  if (existsSync(dest)) return dest;
  const dir = moduleDir(source.module, version);
  mkdirSync(crdCache, { recursive: true });
  const scratch = mkdtempSync(join(crdCache, '.fetch-'));
  try {
    chmodSync(scratch, 0o755);
    for (const [file, names] of Object.entries(source.files)) {
      // Copy each document's text as published: re-serializing could drop or reorder fields.
      const documents = readFileSync(join(dir, file), 'utf8').split(/^---\s*$/m);
      for (const name of names) {
        const text = documents.find(
          (d) => (parse(d) as { metadata?: { name?: string } } | null)?.metadata?.name === name,
        );
        if (!text) throw new Error(`${source.module}@${version} ${file} has no CRD ${name}`);
        writeFileSync(join(scratch, `${name}.yaml`), text.trimStart());
      }
    }
    try {
      renameSync(scratch, dest);
    } catch (err) {
      // Another process (a parallel test worker) finished the same fetch first: use its copy.
      if (!existsSync(dest)) throw err;
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return dest;
}

/** The cache folders of every pinned source, fetching what is missing. */
export function routeCrdDirs(): string[] {
  return SOURCES.map(fetchSource);
}

/** The Gateway API's standard CRDs, VirtualService and DestinationRule at the pinned versions, ready for applyCrds. */
export function routeCrds(): k8s.V1CustomResourceDefinition[] {
  return routeCrdDirs().flatMap((dir) => readCrdFiles(dir));
}

// Run as a script (not imported by tests or the sample): fetch ahead.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  for (const dir of routeCrdDirs()) console.log(`route-crds: ${dir}`);
}
