package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.PgBouncerServer;
import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The relay through a real PgBouncer (1.18 on Debian) with pgjdbc's defaults on its pool (no
 * {@code prepareThreshold=0}): every statement of handoff's must work in transaction pooling, where a named prepared
 * statement or a LISTEN does not survive the transaction. The appends are the application's transactions, whose
 * COMMIT pgjdbc names unless the URL says {@code prepareThreshold=0}, the setting docs/operations.md asks of the
 * application behind such a pooler. Without a direct notification connection the relay says once that it polls;
 * with one, or in session pooling, notifications wake it.
 */
@HandoffTest
class RelayBehindPgBouncerTest {

  /** Enough transactions that every statement runs far more than pgjdbc's prepareThreshold (5) on a connection. */
  private static final int TRANSACTIONS = 60;
  private static final int PER_TRANSACTION = 10;
  /**
   * Messages appended one by one, each after the previous one reached the stream, with an idle poll of 10 minutes
   * and a lease check every 200 s, all within {@link #WAKE_DEADLINE}: the relay keeps publishing through the pooler
   * with notifications set up, and logs nothing. That alone does not prove a notification woke it: each row the
   * relay finds starts its polling's doubling over, so polling would meet this deadline too. {@code AppendWakeUpTest}
   * counts the notifications themselves.
   */
  private static final int WOKEN = 20;
  private static final Duration WAKE_DEADLINE = Duration.ofSeconds(60);

  private final TestEnvironment env;
  private final Outbox outbox;
  private int appended;
  private String topic;
  private int shards = 1;

  RelayBehindPgBouncerTest(TestEnvironment env) {
    this.env = env;
    this.outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("payments").withShards(4)).build();
  }

  @Test
  void transactionPoolingPublishesEveryRowOnceAndSaysOnceThatItPolls() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION);
        HikariDataSource pool = pgbouncer.newDataSource(6);
        HikariDataSource app = pgbouncer.newDataSource(2, "prepareThreshold", "0");
        LogCapture logs = LogCapture.start()) {
      topic = "polled";
      appended = 0;
      Relay relay = relay(pool).idlePollInterval(Duration.ofMillis(50)).build();
      try {
        relay.start();
        appendBatches(app);
        awaitStreamLength(TRANSACTIONS * PER_TRANSACTION, Duration.ofSeconds(60));
        await("the polling notice").atMost(Duration.ofSeconds(30))
            .until(() -> logs.warnings().stream().anyMatch(l -> l.contains("polls the outbox")));
        appendBatches(app); // after the notice: polling alone carries on
        awaitStreamLength(2 * TRANSACTIONS * PER_TRANSACTION, Duration.ofSeconds(60));
        // Stated, not asserted: how long a lone row waits when only polling finds it.
        List<Long> millis = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
          long start = System.nanoTime();
          append(app, 1);
          awaitStreamLength(appended, Duration.ofSeconds(60));
          millis.add((System.nanoTime() - start) / 1_000_000);
        }
        System.out.printf("behind PgBouncer in transaction mode, polling every 50 ms: 10 lone rows reached the"
            + " stream after %s ms%n", millis);
      } finally {
        assertThat(relay.close(Duration.ofSeconds(10))).isTrue();
      }

      assertPublishedOnce(2 * TRANSACTIONS * PER_TRANSACTION + 10);
      assertThat(logs.warnings()).as("WARN and ERROR lines").singleElement().asString()
          .startsWith("WARN dev.handoff.relay.internal.NotificationListener")
          .contains("polls the outbox every 50 ms (idlePollInterval)")
          .contains("RelayBuilder.notificationDataSource")
          .contains("--notification-jdbc-url");
      assertThat(pgbouncer.log()).doesNotContain("prepared statement");
    }
  }

  @Test
  void transactionPoolingWithADirectNotificationConnectionIsWokenByNotifications() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION);
        HikariDataSource pool = pgbouncer.newDataSource(6);
        HikariDataSource app = pgbouncer.newDataSource(2, "prepareThreshold", "0");
        LogCapture logs = LogCapture.start()) {
      topic = "direct";
      appended = 0;
      assertWokenByNotifications(pool, app, env.dataSource(), logs);
    }
  }

  @Test
  void sessionPoolingKeepsListenAndNeedsNoSecondConnection() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.SESSION);
        HikariDataSource pool = pgbouncer.newDataSource(6);
        LogCapture logs = LogCapture.start()) {
      topic = "session";
      appended = 0;
      assertWokenByNotifications(pool, pool, null, logs);
    }
  }

  /** docs/operations.md's example, line for line (DocExamplesTest checks it), through PgBouncer. */
  @Test
  void theOperationsPageExampleThroughTransactionPoolingIsWokenByNotifications() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION);
        HikariDataSource pooledDataSource = pgbouncer.newDataSource(6);
        HikariDataSource app = pgbouncer.newDataSource(2, "prepareThreshold", "0");
        LogCapture logs = LogCapture.start()) {
      DataSource directDataSource = env.newDataSource(1);
      RedisConnectionSpec redis = env.redisSpec();
      topic = "payments";
      shards = 4;
      appended = 0;

      Relay relay = Relay.builder(pooledDataSource, redis)                     // through PgBouncer, transaction pooling
          .notificationDataSource(directDataSource)                 // one connection held, straight to PostgreSQL
          .topic(TopicConfig.of("payments").withShards(4))
          .schema(env.schema()).keyPrefix(env.keyPrefix())          // the test's own
          .idlePollInterval(Duration.ofMinutes(10)).leaseTtl(Duration.ofMinutes(10))
          .maintenanceInterval(Duration.ofHours(1))                 // so that only a notification wakes it in time
          .build();

      assertWokenByNotifications(relay, app, logs);
      assertThat(env.queryLong("SELECT count(DISTINCT shard) FROM outbox WHERE topic = 'payments'")).isEqualTo(4);
    }
  }

  private void assertWokenByNotifications(DataSource pool, DataSource app, DataSource notifications,
      LogCapture logs) throws Exception {
    RelayBuilder builder = relay(pool).idlePollInterval(Duration.ofMinutes(10)).leaseTtl(Duration.ofMinutes(10))
        .maintenanceInterval(Duration.ofHours(1));
    if (notifications != null) {
      builder.notificationDataSource(notifications);
    }
    assertWokenByNotifications(builder.build(), app, logs);
  }

  private void assertWokenByNotifications(Relay relay, DataSource app, LogCapture logs) throws Exception {
    try {
      relay.start();
      appendBatches(app); // the first cycles and the first maintenance run (which hurries the loop) are behind us
      awaitStreamLength(appended, Duration.ofSeconds(60));
      await("the first maintenance run").atMost(Duration.ofSeconds(30)).until(() -> relay.lastRetention().isPresent());
      long start = System.nanoTime();
      for (int i = 0; i < WOKEN; i++) {
        append(app, 1);
        awaitStreamLength(appended, WAKE_DEADLINE.minusNanos(System.nanoTime() - start));
      }
    } finally {
      assertThat(relay.close(Duration.ofSeconds(10))).isTrue();
    }
    assertPublishedOnce(appended);
    assertThat(logs.warnings()).as("WARN and ERROR lines").isEmpty();
  }

  private RelayBuilder relay(DataSource pool) {
    return Relay.builder(pool, env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic));
  }

  private void appendBatches(DataSource pool) throws SQLException {
    for (int t = 0; t < TRANSACTIONS; t++) {
      append(pool, PER_TRANSACTION);
    }
  }

  private void append(DataSource pool, int n) throws SQLException {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(Message.builder(topic, "order.placed").key("k" + (appended + i)).payload("p" + (appended + i))
          .build());
    }
    try (Connection tx = pool.getConnection()) {
      tx.setAutoCommit(false);
      if (n == 1) {
        outbox.append(tx, batch.get(0));
      } else {
        outbox.appendAll(tx, batch);
      }
      tx.commit();
    }
    appended += n;
  }

  private void awaitStreamLength(long length, Duration within) {
    await("stream length " + length).atMost(within).pollInterval(Duration.ofMillis(10))
        .until(() -> streamLength() >= length);
  }

  /** The entries of the topic's streams, all shards together. */
  private long streamLength() {
    long length = 0;
    for (int shard = 0; shard < shards; shard++) {
      length += env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), topic, shard));
    }
    return length;
  }

  private void assertPublishedOnce(int rows) {
    List<StreamEntry> entries = new ArrayList<>();
    for (int shard = 0; shard < shards; shard++) {
      entries.addAll(env.redis().xrange(StreamFormat.streamKey(env.keyPrefix(), topic, shard), "-", "+", rows + 10));
    }
    Set<String> ids = new HashSet<>();
    entries.forEach(e -> ids.add(e.getFields().get(StreamFormat.MESSAGE_ID)));
    assertThat(entries).hasSize(rows);
    assertThat(ids).hasSize(rows);
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ? AND published_at IS NOT NULL", topic))
        .isEqualTo(rows);
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE topic = ?", topic)).isEqualTo(rows);
  }
}
