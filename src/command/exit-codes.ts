/**
 * The exit statuses of the commands people and the DaemonSet run (install, uninstall, daemon and
 * the ops commands), one table for all of them and documented once (docs/troubleshooting.md, "Exit
 * statuses of the commands"). The CNI verbs keep theirs: 0, or 1 with a CNI error on stdout.
 * A folder of their own at the bottom, beside nothing it depends on: the daemon, the installer,
 * the ops commands and the CLI all end commands and name them.
 */
export const ExitCode = {
  /** Fine. */
  Ok: 0,
  /**
   * The command did not get what it was for: a check found a problem, ADD would fail, the record
   * asked for does not exist; install, uninstall or the daemon failed.
   */
  Problem: 1,
  /** The command line is wrong: commander's parse errors and Plexus's own checks of flags. */
  Usage: 2,
  /** The command could not run: a config or state that cannot be read, no API server. */
  CannotRun: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
