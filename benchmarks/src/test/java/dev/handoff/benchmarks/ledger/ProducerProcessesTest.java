package dev.handoff.benchmarks.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.List;
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
        ProducerProcess.Mode.BARE, env.schema(), 4, "procs-", 0, Duration.ofSeconds(2).toNanos(),
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
}
