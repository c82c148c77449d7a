/**
 * How a role's process ends on SIGTERM or SIGINT: it stops acting at once and exits within its
 * grace period, whatever it is doing. Installed before anything else:
 * - during start-up (caches listing, bundling, an apiserver that does not answer) the process
 *   exits at once: nothing acts yet, no Lease is held, and everything a role does is safe to repeat;
 * - once started, `signalled` resolves and the role stops gracefully (no new work, the Leases let
 *   go), bounded by the grace period: a stop that hangs (an apiserver outage) ends in an exit;
 * - a second signal exits at once.
 */
export interface ShutdownOptions {
  /** How long a graceful stop may take before the process exits anyway. */
  graceMs: number;
  log: (message: string) => void;
  /** process.exit, or a test's stand-in. */
  exit?: (code: number) => void;
  /** The process to listen on (a test's emitter). */
  on?: (signal: NodeJS.Signals, handler: () => void) => void;
}

export class Shutdown {
  /** Resolves with the signal once one arrives after start-up. */
  readonly signalled: Promise<NodeJS.Signals>;
  private starting = true;
  private received: NodeJS.Signals | undefined;
  private resolve!: (signal: NodeJS.Signals) => void;
  private readonly exit: (code: number) => void;

  constructor(private readonly settings: ShutdownOptions) {
    this.exit = settings.exit ?? ((code) => process.exit(code));
    this.signalled = new Promise((resolve) => (this.resolve = resolve));
    const on = settings.on ?? ((signal, handler) => process.on(signal, handler));
    for (const signal of ['SIGTERM', 'SIGINT'] as const) on(signal, () => this.receive(signal));
  }

  /** Start-up is over: from now on a signal stops the role gracefully, within the grace period. */
  started(): void {
    this.starting = false;
    if (this.received) this.begin(this.received);
  }

  private receive(signal: NodeJS.Signals): void {
    if (this.received) {
      this.settings.log(`${signal} again: exiting now`);
      return this.exit(1);
    }
    this.received = signal;
    if (this.starting) {
      this.settings.log(`${signal} during start-up: exiting now (nothing acts yet)`);
      return this.exit(0);
    }
    this.begin(signal);
  }

  private begin(signal: NodeJS.Signals): void {
    this.settings.log(`${signal}: stopping (at most ${Math.round(this.settings.graceMs / 1000)}s)`);
    // Unref'd: a stop that finishes lets the process end by itself, before this fires.
    setTimeout(() => {
      this.settings.log(`still stopping after ${Math.round(this.settings.graceMs / 1000)}s: exiting now`);
      this.exit(1);
    }, this.settings.graceMs).unref();
    this.resolve(signal);
  }
}
