package dev.handoff.benchmarks.ledger;

/**
 * A process's or thread's {@code /proc/.../stat} line (Linux): {@code pid (comm) state ppid ...}. The command name
 * may hold spaces and parentheses, so the fields are read after its last {@code ')'}.
 */
final class ProcStat {

  /** Linux's clock ticks per second in {@code /proc} (USER_HZ, 100 on every architecture it runs on). */
  static final int TICKS_PER_SECOND = 100;

  private ProcStat() {}

  /** The fields after the command name: index 0 is field 3 (state), counting from 1 as {@code proc(5)} does. */
  static String[] fieldsAfterCommand(String stat) {
    return stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
  }

  /** utime + stime (fields 14 and 15), in ticks. */
  static long cpuTicks(String stat) {
    String[] f = fieldsAfterCommand(stat);
    return Long.parseLong(f[11]) + Long.parseLong(f[12]);
  }

  /** ppid (field 4). */
  static long parent(String stat) {
    return Long.parseLong(fieldsAfterCommand(stat)[1]);
  }
}
