package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.PgBouncerServer;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The ledger end to end through a real PgBouncer, once per way of running it:
 *
 * <ul>
 *   <li>{@link LedgerThroughTransactionPoolingTest}: transaction pooling, nothing else. The relay and the consumer
 *       get a pool with pgjdbc's defaults; the relay finds that notifications cannot reach it, says so once, and
 *       polls every second (the default idle poll).
 *   <li>{@link LedgerThroughTransactionPoolingWithDirectNotificationsTest}: the same with a direct connection for
 *       the relay's LISTEN, and an idle poll of 10 minutes.
 *   <li>{@link LedgerThroughSessionPoolingTest}: session pooling, where LISTEN works through the pool.
 * </ul>
 *
 * <p>Payments are made in {@value #BATCHES} transactions of {@value #BATCH} by the application's pool, which has
 * {@code prepareThreshold=0} as docs/operations.md asks of applications behind transaction pooling (pgjdbc names
 * the application's COMMIT otherwise); each transaction waits until the relay has published it. Every payment must
 * be charged once, and nothing may be logged at WARN or ERROR but the polling notice.
 */
@HandoffTest
abstract class LedgerThroughPgBouncerTest {

  private static final int BATCHES = 20;
  private static final int BATCH = 100;
  /**
   * With an idle poll of 10 minutes and a lease check every 200 s, {@value #BATCHES} transactions published one
   * after another within this deadline. Polling alone would meet it too (each row found starts the relay's doubling
   * over, and the next batch follows within milliseconds), so what this shows is that the path with notifications
   * publishes every payment once. {@code RelayBehindPgBouncerTest} counts one notification per append made through
   * the pooler while the relay sleeps, and {@code AppendWakeUpTest} shows that a notification wakes it.
   */
  private static final Duration WAKE_DEADLINE = Duration.ofSeconds(60);

  private final TestEnvironment env;
  private final PoolMode mode;
  private final boolean directNotifications;

  LedgerThroughPgBouncerTest(TestEnvironment env, PoolMode mode, boolean directNotifications) {
    this.env = env;
    this.mode = mode;
    this.directNotifications = directNotifications;
  }

  @Test
  void everyPaymentIsChargedOnceAndOnlyThePollingNoticeIsLogged() throws Exception {
    LedgerMigrations.migrate(env.dataSource(), env.schema()); // migrations on a direct connection
    boolean polls = mode == PoolMode.TRANSACTION && !directNotifications;
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(mode);
        HikariDataSource handoff = pgbouncer.newDataSource(8);
        HikariDataSource app = pgbouncer.newDataSource(4, "prepareThreshold", "0");
        LogCapture logs = LogCapture.start()) {
      RelayBuilder builder = Relay.builder(handoff, env.redisSpec())
          .schema(env.schema())
          .keyPrefix(env.keyPrefix())
          .topic(PaymentEvents.TOPIC_CONFIG);
      if (!polls) {
        builder.idlePollInterval(Duration.ofMinutes(10)).leaseTtl(Duration.ofMinutes(10))
            .maintenanceInterval(Duration.ofHours(1));
      }
      if (directNotifications) {
        builder.notificationDataSource(env.dataSource());
      }
      Relay relay = builder.build();
      LedgerConsumer consumer = LedgerConsumer.of(StreamConsumer.builder(handoff, env.redisSpec())
          .schema(env.schema())
          .keyPrefix(env.keyPrefix())
          .topic(PaymentEvents.TOPIC_CONFIG)
          .group(LedgerConsumer.DEFAULT_GROUP)
          .consumerName("c1")
          .workers(2)
          .block(Duration.ofMillis(100)), handoff, false, null);
      PaymentService payments = new PaymentService(app, env.schema());
      try {
        relay.start();
        consumer.start();
        // The first maintenance run hurries the relay's loop while it lasts; the wake-up argument starts after it.
        await("the first maintenance run").atMost(Duration.ofSeconds(30))
            .until(() -> relay.lastRetention().isPresent());
        long start = System.nanoTime();
        for (int b = 0; b < BATCHES; b++) {
          List<Payment> batch = new ArrayList<>();
          for (int i = 0; i < BATCH; i++) {
            int n = b * BATCH + i;
            batch.add(new Payment("pgb-" + n, "acct-" + (n % 50), 100 + n, false));
          }
          assertThat(payments.payAll(batch)).isEqualTo(BATCH);
          long paid = (long) (b + 1) * BATCH;
          Duration within = polls ? Duration.ofSeconds(30) : WAKE_DEADLINE.minusNanos(System.nanoTime() - start);
          await("published " + paid).atMost(within).pollInterval(Duration.ofMillis(5))
              .until(() -> published() == paid);
        }
        await("every payment charged").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
            .until(() -> charges() == (long) BATCHES * BATCH && consumer.consumer().status().drained());
        if (polls) {
          await("the polling notice").atMost(Duration.ofSeconds(30))
              .until(() -> logs.warnings().stream().anyMatch(l -> l.contains("polls the outbox")));
        }
      } finally {
        consumer.close(Duration.ofSeconds(5));
        relay.close(Duration.ofSeconds(5));
      }

      int total = BATCHES * BATCH;
      assertThat(charges()).isEqualTo(total);
      assertThat(env.queryLong("SELECT count(DISTINCT payment_id) FROM charge WHERE ledger = 'ledger'"))
          .isEqualTo(total);
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'processed'"))
          .isEqualTo(total);
      assertThat(env.queryLong("SELECT count(*) FROM dead_letter")).isZero();
      LedgerAudit.Result audit = LedgerAudit.audit(env.dataSource(), env.schema(), LedgerConsumer.DEFAULT_GROUP);
      assertThat(audit.passed()).as("audit %s%n%s", audit, String.join("\n", audit.lines())).isTrue();
      assertThat(audit.charges()).isEqualTo(total);
      assertThat(audit.duplicated()).isZero();
      assertThat(audit.missing()).isZero();
      if (polls) {
        assertThat(logs.warnings()).as("WARN and ERROR lines").singleElement().asString()
            .contains("polls the outbox every 1000 ms (idlePollInterval)")
            .contains("--notification-jdbc-url");
      } else {
        assertThat(logs.warnings()).as("WARN and ERROR lines").isEmpty();
      }
      assertThat(pgbouncer.log()).doesNotContain("prepared statement");
      System.out.printf("%s: append-to-stream latency over %d transactions: p50 %d ms, p99 %d ms%n",
          getClass().getSimpleName(), BATCHES, latency(0.5), latency(0.99));
    }
  }

  private long published() {
    return env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NOT NULL");
  }

  private long charges() {
    return env.queryLong("SELECT count(*) FROM charge WHERE ledger = 'ledger'");
  }

  /** From the append's transaction start (created_at) to the stream ID's millisecond (the relay's assignment). */
  private long latency(double quantile) {
    return env.queryLong("SELECT percentile_disc(?) WITHIN GROUP (ORDER BY stream_ms"
        + " - (extract(epoch FROM created_at) * 1000)::bigint) FROM outbox", quantile);
  }
}
