/**
 * What people ask of a running activation: cancel and retry, as Updates (accepted, or refused with
 * the reason) and as signals (which cannot answer), each token handled once; and the progress query.
 */
import { setHandler } from '@temporalio/workflow';
import { answerRequest, type RequestAction } from '../decisions/activation.js';
import { cancelSignal, cancelUpdate, progressQuery, retrySignal, retryUpdate, type ActionRequest, type ActivationProgress } from '../shared/activation.js';

export class ActivationRequests {
  /** The cancel asked (or the deletion seen) and not yet acted on by an ending attempt. */
  cancel: ActionRequest | undefined;
  retry = false;
  /** The workflow closes after this attempt instead of waiting for a retry (deleted). */
  close = false;
  private readonly seen = new Set<string>();

  constructor(private readonly progress: ActivationProgress) {
    setHandler(progressQuery, () => progress);
    setHandler(cancelSignal, (r) => void this.handle('cancel', r));
    setHandler(retrySignal, (r) => void this.handle('retry', r));
    for (const [update, action] of [[cancelUpdate, 'cancel'], [retryUpdate, 'retry']] as const) {
      setHandler(update, (r) => ({ outcome: 'Accepted' as const, message: this.apply(action, r) }), {
        validator: (r) => {
          const a = this.answer(action, r);
          if (!a.accepted) throw new Error(a.message);
        },
      });
    }
  }

  get cancelled(): boolean {
    return this.cancel !== undefined;
  }

  /** The VectorActivation is gone (or going): no new step starts and the workflow closes. */
  deleted(): void {
    this.cancel ??= { reason: 'the VectorActivation was deleted', deleted: true };
    this.close = true;
  }

  private answer(action: RequestAction, r: ActionRequest) {
    return r.token && this.seen.has(`${action}:${r.token}`) ? { accepted: true as const } : answerRequest(action, this.progress.phase);
  }

  private apply(action: RequestAction, r: ActionRequest): string {
    if (r.token && this.seen.has(`${action}:${r.token}`)) return `already handled (${r.token})`;
    if (r.token) this.seen.add(`${action}:${r.token}`);
    if (action === 'retry') this.retry = true;
    else {
      this.cancel = r;
      this.close ||= r.deleted === true;
    }
    return `${action} accepted while ${this.progress.phase}`;
  }

  private handle(action: RequestAction, r: ActionRequest): void {
    if (this.answer(action, r).accepted) this.apply(action, r);
  }
}
