/**
 * The core's half of a landscape's report (docs/landscapes.md): which managed rules the
 * landscape's workers read, per executor type (every Stage that names the landscape, in the
 * namespaces it allows, with each registration an activation there may run), and the write of
 * what they answered into the Landscape's status, where the Stage controller reads it.
 */
import type { LandscapeResource, RouteReport } from '../api/landscape.js';
import { stageVersionInfo, type StageVersionInfo, type StageVersionResource } from '../api/stage-version.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import { readableRegistration } from '../executors/index.js';
import { ApplicationFailure } from '@temporalio/activity';
import type { CoreDeps } from './deps.js';

/** One Stage's rules, of the registrations of one executor type, for a landscape's worker to read. */
export interface ReportTarget {
  namespace: string;
  stage: string;
  stageVersions: StageVersionInfo[];
  registrations: { name: string; config: unknown; consent: { allowCrossNamespaceFrom?: string[] } }[];
}

/** What a round of reports asks, and the Landscape's reports as they stand (its uid: the same Landscape). */
export type ReportRound =
  | { exists: false }
  | { exists: true; uid: string; reports: RouteReport[]; byType: { type: string; targets: ReportTarget[] }[] };

/** The most a Landscape's reports may weigh together, well under etcd's object size limit (1.5 MiB). */
const MAX_REPORTS_BYTES = 1024 * 1024;

/** The registrations an activation of `namespace` may run, by executor type, as a report round asks them. */
function readableByType(registrations: readonly CustomObject[], namespace: string) {
  const ofType = new Map<string, ReportTarget['registrations']>();
  for (const registration of registrations) {
    const readable = readableRegistration(registration as never, namespace);
    if (!readable) continue;
    const { allowCrossNamespaceFrom } = registration.spec ?? {};
    ofType.set(readable.executor.type, [
      ...(ofType.get(readable.executor.type) ?? []),
      {
        name: readable.name,
        config: registration.spec?.spec ?? {},
        consent: allowCrossNamespaceFrom ? { allowCrossNamespaceFrom } : {},
      },
    ]);
  }
  return ofType;
}

export function landscapeReportActivities(deps: CoreDeps) {
  const { objects, systemNamespace, config } = deps;
  /** The Landscape as watched, else read. */
  const landscapeNamed = async (name: string) =>
    (config?.list('Landscape')?.find((object) => object.metadata.name === name) ??
      (await objects.get('Landscape', systemNamespace, name))) as LandscapeResource | undefined;
  return {
    /** The rules the landscape's workers read in this round, per executor type. */
    async landscapeReportRound(landscape: string): Promise<ReportRound> {
      const found = await landscapeNamed(landscape);
      if (!found || found.metadata.deletionTimestamp) return { exists: false };
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
      const readableIn = new Map(namespaces.map((namespace) => [namespace, readableByType(registrations, namespace)]));
      const byType = new Map<string, ReportTarget[]>();
      for (const stage of stages) {
        const namespace = stage.metadata.namespace!;
        const versions = (stageVersions.get(namespace) ?? [])
          .filter((sv) => sv.spec?.stage === stage.metadata.name)
          .map((sv) => stageVersionInfo(sv as unknown as StageVersionResource));
        if (versions.length === 0) continue;
        for (const [type, list] of readableIn.get(namespace)!) {
          if (!byType.has(type)) byType.set(type, []);
          byType
            .get(type)!
            .push({ namespace, stage: stage.metadata.name, stageVersions: versions, registrations: list });
        }
      }
      return {
        exists: true,
        uid: found.metadata.uid!,
        reports: found.status?.reports ?? [],
        byType: [...byType].sort(([a], [b]) => a.localeCompare(b)).map(([type, targets]) => ({ type, targets })),
      };
    },

    /**
     * Writes the reports into the Landscape's status (the whole list: one writer); false when it is
     * gone, or is another Landscape of the same name (their reports are of the one asked).
     */
    async writeLandscapeReports(landscape: string, uid: string, reports: RouteReport[]): Promise<boolean> {
      const bytes = JSON.stringify(reports).length;
      if (bytes > MAX_REPORTS_BYTES)
        throw ApplicationFailure.nonRetryable(
          `the reports of Landscape ${landscape} take ${bytes} bytes, more than its status holds (${MAX_REPORTS_BYTES}): give some of its Stages a Landscape of their own`,
          'ReportTooLarge',
        );
      // Read first: a status patch does not check the uid (the apiserver ignores it there).
      const found = await objects.get('Landscape', systemNamespace, landscape);
      if (found?.metadata.uid !== uid) return false;
      return objects.patchStatus('Landscape', systemNamespace, landscape, { reports });
    },
  };
}
