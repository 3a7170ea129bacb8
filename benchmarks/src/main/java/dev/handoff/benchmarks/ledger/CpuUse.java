package dev.handoff.benchmarks.ledger;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The CPU a run took, per payment, from its producers' start to the last charge: the whole machine's (every process:
 * this JVM, producer processes of their own, PostgreSQL and Redis when they run here) and this JVM's. On a machine
 * whose cores are all busy, latency grows with the share of them a pipeline takes, so this is the figure that
 * explains a tail. Read from {@code /proc/stat} and {@code /proc/self/stat} (Linux); {@code NaN} elsewhere. Busy
 * time is user, nice, system, irq and softirq; steal (another virtual machine's) and idle are not.
 *
 * @param machineMsPerPayment the machine's CPU milliseconds per payment
 * @param jvmMsPerPayment this JVM's CPU milliseconds per payment
 * @param machineCores the machine's busy cores over the span, on average
 */
public record CpuUse(double machineMsPerPayment, double jvmMsPerPayment, double machineCores) {

  static final CpuUse NONE = new CpuUse(Double.NaN, Double.NaN, Double.NaN);

  /** Where the counters stood at one moment. */
  record Mark(long machineTicks, long jvmTicks, long nanos) {

    /** What was used from this mark to now, for {@code payments}. */
    CpuUse to(Mark end, long payments) {
      if (machineTicks < 0 || end.machineTicks < 0 || payments <= 0) {
        return NONE;
      }
      double machineMs = (end.machineTicks - machineTicks) * 1000.0 / ProcStat.TICKS_PER_SECOND;
      double jvmMs = (end.jvmTicks - jvmTicks) * 1000.0 / ProcStat.TICKS_PER_SECOND;
      double seconds = (end.nanos - nanos) / 1e9;
      return new CpuUse(machineMs / payments, jvmMs / payments, seconds > 0 ? machineMs / 1000 / seconds : Double.NaN);
    }
  }

  /** The counters now; negative where {@code /proc} cannot be read. */
  static Mark mark() {
    return new Mark(machineTicks(), jvmTicks(), System.nanoTime());
  }

  private static long machineTicks() {
    try {
      // "cpu  user nice system idle iowait irq softirq steal guest guest_nice": the first line, all cores.
      String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      return Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3]) + Long.parseLong(f[6])
          + Long.parseLong(f[7]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static long jvmTicks() {
    try {
      return ProcStat.cpuTicks(Files.readString(Path.of("/proc/self/stat")));
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }
}
