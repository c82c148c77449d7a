/**
 * The core's half of a landscape's report (docs/landscapes.md): which managed rules the
 * landscape's workers read, per executor type (every Stage that names the landscape, in the
 * namespaces it allows, with each registration an activation there may run), and the write of
 * what they answered into the Landscape's status, where the Stage controller reads it.
 */
import type { LandscapeResource, RouteReport } from '../api/landscape.js';
import type { StageVersionInfo } from '../api/stage-version.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import { readableRegistration } from '../executors/index.js';
import { kubeTime } from '../shared/format.js';
import type { CoreDeps } from './deps.js';

/** One Stage's rules of one registration, for a landscape's worker to read. */
export interface ReportTarget {
  namespace: string;
  stage: string;
  registration: string;
  config: unknown;
  allowCrossNamespaceFrom?: string[];
  stageVersions: StageVersionInfo[];
}

/** What a round of reports asks: undefined `observedAt` when the Landscape is gone. */
export interface ReportRound {
  exists: boolean;
  /** When the core asked: every route change finished before it is in the answers. */
  observedAt: string;
  byType: { type: string; targets: ReportTarget[] }[];
}

const stageVersionInfo = (sv: CustomObject): StageVersionInfo => ({
  name: sv.metadata.name,
  revision: sv.spec?.revision,
  vector: sv.spec?.vector,
  ...(sv.spec?.backend ? { backend: sv.spec.backend } : {}),
});

export function landscapeReportActivities(deps: CoreDeps) {
  const { objects, systemNamespace, config } = deps;
  return {
    /** The rules the landscape's workers read in this round, per executor type. */
    async landscapeReportRound(landscape: string): Promise<ReportRound> {
      // Asked before anything is read: an execution that ended before this second is in the answers.
      const observedAt = kubeTime();
      const cached = config?.list('Landscape')?.find((object) => object.metadata.name === landscape);
      const found = (cached ?? (await objects.get('Landscape', systemNamespace, landscape))) as
        LandscapeResource | undefined;
      if (!found || found.metadata.deletionTimestamp) return { exists: false, observedAt, byType: [] };
      const allowed = found.spec.allowedNamespaces;
      const listed = allowed.includes('*')
        ? await objects.listAllNamespaces('Stage')
        : (await Promise.all(allowed.map((namespace) => objects.list('Stage', namespace)))).flat();
      const stages = listed.filter((stage) => stage.spec?.landscape === landscape && !stage.metadata.deletionTimestamp);
      const namespaces = [...new Set(stages.map((stage) => stage.metadata.namespace!))].sort();
      const stageVersions = new Map(
        await Promise.all(
          namespaces.map(async (namespace) => [namespace, await objects.list('StageVersion', namespace)] as const),
        ),
      );
      const registrations =
        config?.list('ActivationTaskRegistration') ??
        (await objects.list('ActivationTaskRegistration', systemNamespace));
      const byType = new Map<string, ReportTarget[]>();
      for (const stage of stages) {
        const namespace = stage.metadata.namespace!;
        const versions = (stageVersions.get(namespace) ?? [])
          .filter((sv) => sv.spec?.stage === stage.metadata.name)
          .map(stageVersionInfo);
        if (versions.length === 0) continue;
        for (const registration of registrations) {
          const readable = readableRegistration(registration as never, namespace);
          if (!readable) continue;
          const targets = byType.get(readable.executor.type) ?? [];
          targets.push({
            namespace,
            stage: stage.metadata.name,
            registration: readable.name,
            config: registration.spec?.spec ?? {},
            ...(registration.spec?.allowCrossNamespaceFrom
              ? { allowCrossNamespaceFrom: registration.spec.allowCrossNamespaceFrom }
              : {}),
            stageVersions: versions,
          });
          byType.set(readable.executor.type, targets);
        }
      }
      return {
        exists: true,
        observedAt,
        byType: [...byType].sort(([a], [b]) => a.localeCompare(b)).map(([type, targets]) => ({ type, targets })),
      };
    },

    /** Writes the reports into the Landscape's status (the whole list: one writer); false when it is gone. */
    async writeLandscapeReports(landscape: string, reports: RouteReport[]): Promise<boolean> {
      return objects.patchStatus('Landscape', systemNamespace, landscape, { reports });
    },
  };
}
