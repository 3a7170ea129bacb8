package dev.handoff.benchmarks.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A multi-process shape's producers are real processes that report every commit back: what they report is what the
 * database holds, and their payment numbers are dense and never shared, so the run's timings index every payment.
 */
@HandoffTest
class ProducerProcessesTest {

  private final TestEnvironment env;

  ProducerProcessesTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void twoProcessesReportExactlyTheirCommitsWithDensePaymentNumbers() {
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    env.execute("DELETE FROM payment WHERE payment_id LIKE 'procs-%'");
    Set<Long> numbers = ConcurrentHashMap.newKeySet();
    AtomicLong reported = new AtomicLong();
    AtomicLong duplicates = new AtomicLong();
    AtomicLong firstCommit = new AtomicLong(Long.MAX_VALUE);
    ProducerProcesses producers = new ProducerProcesses(Shape.parse("2x2x3"), env.postgres().jdbcUrl(),
        ProducerProcess.Mode.BARE, env.schema(), 4, "procs-", 0, Duration.ofSeconds(2).toNanos(), null,
        (base, count, nanos) -> {
          firstCommit.accumulateAndGet(nanos, Math::min);
          for (int i = 0; i < count; i++) {
            if (!numbers.add(base + i)) {
              duplicates.incrementAndGet();
            }
          }
          reported.addAndGet(count);
        });
    producers.join();

    assertThat(producers.failure()).isNull();
    // Both were told to start once both were ready, whatever their start-up took: each wrote.
    assertThat(firstCommit.get()).as("first commit after the start").isGreaterThanOrEqualTo(producers.from());
    assertThat(duplicates.get()).isZero();
    assertThat(reported.get()).isPositive().isEqualTo(
        env.queryLong("SELECT count(*) FROM payment WHERE payment_id LIKE 'procs-%'"));
    // Three payments per transaction, process k taking blocks k, k + 2, k + 4...: each process's blocks are whole and
    // run without a gap from block k.
    for (int k = 0; k < 2; k++) {
      int process = k;
      List<Long> blocks = numbers.stream().filter(n -> n / 3 % 2 == process).map(n -> n / 3).distinct().sorted()
          .toList();
      for (int j = 0; j < blocks.size(); j++) {
        assertThat(blocks.get(j)).isEqualTo(2L * j + k);
        for (int i = 0; i < 3; i++) {
          assertThat(numbers).contains(blocks.get(j) * 3 + i);
        }
      }
    }
  }

  /**
   * With {@code --pin-producers} a producer process runs on the producers' CPUs, and so do its backends, while it
   * writes: read from the kernel ({@code /proc/<pid>/status}) at its first commit.
   */
  @Test
  void aPinnedProducerProcessAndItsBackendsRunOnTheProducersCpus() {
    LedgerMigrations.migrate(env.dataSource(), env.schema());
    Map<String, String> seen = new ConcurrentHashMap<>();
    AtomicLong reported = new AtomicLong();
    ProducerProcesses producers = new ProducerProcesses(Shape.parse("2x2x1"), env.postgres().jdbcUrl(),
        ProducerProcess.Mode.BARE, env.schema(), 4, "pinned-", 0, Duration.ofSeconds(1).toNanos(),
        new CpuPinning.Split("0", "0", "0"), (base, count, nanos) -> {
          if (reported.getAndAdd(count) == 0) {
            ProcessHandle.current().children()
                // The producers are this JVM's only java children. Their command line cannot name them: the JDK reads
                // at most 4,096 bytes of /proc/<pid>/cmdline, and the class path before the main class is longer.
                .filter(p -> p.info().command().orElse("").endsWith("/java"))
                .forEach(p -> seen.put("process " + p.pid(), cpus(p.pid())));
            for (long pid : env.queryList("SELECT pid::bigint FROM pg_stat_activity"
                + " WHERE application_name LIKE 'bench-producer-process-%'", Long.class)) {
              seen.put("backend " + pid, cpus(pid));
            }
          }
        });
    producers.join();

    assertThat(producers.failure()).isNull();
    assertThat(reported.get()).isPositive();
    assertThat(seen.keySet().stream().filter(k -> k.startsWith("process"))).hasSize(2);
    assertThat(seen.keySet().stream().filter(k -> k.startsWith("backend"))).hasSize(4);
    assertThat(seen.values()).containsOnly("0");
  }

  private static String cpus(long pid) {
    try {
      return Files.readAllLines(Path.of("/proc", Long.toString(pid), "status")).stream()
          .filter(l -> l.startsWith("Cpus_allowed_list:")).map(l -> l.substring(18).trim()).findFirst().orElse("?");
    } catch (IOException e) {
      return "gone";
    }
  }
}
