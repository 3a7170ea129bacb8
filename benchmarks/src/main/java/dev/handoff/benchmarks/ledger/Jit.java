package dev.handoff.benchmarks.ledger;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * The CPU this JVM's JIT compiler threads used while something ran: the bench's check that a measured run ran warm.
 * On two cores a compiler thread still at work takes its CPU from the run it overlaps, and the pipeline that runs
 * right after a switch from the other one pays for it (code is deoptimised when the other pipeline's calls reach it,
 * and compiled again). Read from {@code /proc/self/task} (Linux; the threads named {@code C1/C2 CompilerThread}),
 * where {@code CompilationMXBean}'s time would count a compiler waiting for a core as compiling.
 */
final class Jit {

  /** {@code cpuMillis} of the compiler threads' CPU while {@code what} ran for {@code seconds}. */
  record During(String what, double seconds, double cpuMillis) {

    /** The compilers' CPU as a share of one core over the run. */
    double cores() {
      return seconds > 0 ? cpuMillis / (seconds * 1000) : 0;
    }
  }

  private Jit() {}

  /** Runs {@code body} and adds what the compilers used meanwhile to {@code out}. */
  static <R> R during(String what, List<During> out, Supplier<R> body) {
    long before = compilerCpuMillis();
    long start = System.nanoTime();
    R result = body.get();
    // A compiler thread that ends takes its count with it: never report less than nothing.
    out.add(new During(what, (System.nanoTime() - start) / 1e9, Math.max(0, compilerCpuMillis() - before)));
    return result;
  }

  /** The CPU time the live compiler threads have used so far, in milliseconds; 0 where {@code /proc} is absent. */
  static long compilerCpuMillis() {
    Path tasks = Path.of("/proc/self/task");
    if (!Files.isDirectory(tasks)) {
      return 0;
    }
    long ticks = 0;
    try (Stream<Path> all = Files.list(tasks)) {
      for (Path task : (Iterable<Path>) all::iterator) {
        ticks += compilerTicks(task.resolve("stat"));
      }
    } catch (IOException e) {
      return 0;
    }
    return ticks * 1000 / ProcStat.TICKS_PER_SECOND;
  }

  /** utime + stime of a compiler thread's {@code stat}, 0 for any other thread or one that has ended. */
  private static long compilerTicks(Path stat) {
    String line;
    try {
      line = Files.readString(stat);
    } catch (IOException e) {
      return 0;
    }
    int open = line.indexOf('(');
    int close = line.lastIndexOf(')');
    if (open < 0 || close < open || !line.substring(open + 1, close).matches("C\\d CompilerThre.*")) {
      return 0;
    }
    return ProcStat.cpuTicks(line);
  }
}
