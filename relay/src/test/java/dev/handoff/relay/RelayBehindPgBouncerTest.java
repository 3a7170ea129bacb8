package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Notifications;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.NotificationCounter;
import dev.handoff.testing.PgBouncerServer;
import dev.handoff.testing.PgBouncerServer.PoolMode;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
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
   * Messages appended one by one through the pooler, each once the relay sleeps on every shard of the topic (its
   * LISTEN session holds their wake locks, read from {@code pg_locks}), within {@link #WAKE_DEADLINE}. The relay
   * sleeps only while its LISTEN session hears: its own probe NOTIFY, sent through the same pool as the appends,
   * arrived there. A LISTEN session of the test's own then counts exactly one notification per message that found
   * the relay asleep, which the append's own transaction shows: it could not take its shard's wake lock shared. The
   * relay can wake an instant after the test saw it asleep (its last look after taking the locks found the previous
   * message, or it heard that message's notification late), and an append that meets it awake rightly does not
   * notify, so the test counts, not assumes, which appends found it asleep. This does not show which woke the relay,
   * the notification or its next poll (its waits double from 32 ms after it falls asleep); {@code AppendWakeUpTest}
   * shows that a notification wakes it.
   */
  private static final int WOKEN = 20;
  private static final Duration WAKE_DEADLINE = Duration.ofSeconds(60);
  /** The granted wake locks of a topic ({@link #wakeLockKey()}) in {@code pg_locks}, as a FROM and WHERE clause. */
  private static final String WAKE_LOCKS =
      "FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid::bigint = ?";

  private final TestEnvironment env;
  private final Outbox outbox;
  private int appended;
  /** Appends whose transaction found the relay asleep: it could not take the wake lock shared, so it notified. */
  private int foundAsleep;
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
  void transactionPoolingWithADirectNotificationConnectionHearsEveryAppendWhileAsleep() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.TRANSACTION);
        HikariDataSource pool = pgbouncer.newDataSource(6);
        HikariDataSource app = pgbouncer.newDataSource(2, "prepareThreshold", "0");
        LogCapture logs = LogCapture.start()) {
      topic = "direct";
      appended = 0;
      assertEveryAppendWhileAsleepNotifies(pool, app, env.dataSource(), logs);
    }
  }

  @Test
  void sessionPoolingKeepsListenAndNeedsNoSecondConnection() throws Exception {
    try (PgBouncerServer pgbouncer = PgBouncerServer.start(PoolMode.SESSION);
        HikariDataSource pool = pgbouncer.newDataSource(6);
        LogCapture logs = LogCapture.start()) {
      topic = "session";
      appended = 0;
      assertEveryAppendWhileAsleepNotifies(pool, pool, null, logs);
    }
  }

  /** docs/operations.md's example, line for line (DocExamplesTest checks it), through PgBouncer. */
  @Test
  void theOperationsPageExampleThroughTransactionPoolingHearsEveryAppendWhileAsleep() throws Exception {
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
          .maintenanceInterval(Duration.ofHours(1))                 // so that it sleeps
          .build();

      assertEveryAppendWhileAsleepNotifies(relay, app, logs);
      assertThat(env.queryLong("SELECT count(DISTINCT shard) FROM outbox WHERE topic = 'payments'")).isEqualTo(4);
    }
  }

  private void assertEveryAppendWhileAsleepNotifies(DataSource pool, DataSource app, DataSource notifications,
      LogCapture logs) throws Exception {
    RelayBuilder builder = relay(pool).idlePollInterval(Duration.ofMinutes(10)).leaseTtl(Duration.ofMinutes(10))
        .maintenanceInterval(Duration.ofHours(1));
    if (notifications != null) {
      builder.notificationDataSource(notifications);
    }
    assertEveryAppendWhileAsleepNotifies(builder.build(), app, logs);
  }

  private void assertEveryAppendWhileAsleepNotifies(Relay relay, DataSource app, LogCapture logs) throws Exception {
    List<String> heard;
    try (NotificationCounter counter = NotificationCounter.listen(env, Notifications.channel(env.schema()),
        WAKE_DEADLINE)) {
      try {
        relay.start();
        appendBatches(app); // the first cycles and the first maintenance run (which hurries the loop) are behind us
        awaitStreamLength(appended, Duration.ofSeconds(60));
        await("the first maintenance run").atMost(Duration.ofSeconds(30))
            .until(() -> relay.lastRetention().isPresent());
        counter.drain(); // what the start announced
        long start = System.nanoTime();
        for (int i = 0; i < WOKEN; i++) {
          Duration left = WAKE_DEADLINE.minusNanos(System.nanoTime() - start);
          await("the relay asleep on every shard of " + topic).atMost(left).pollInterval(Duration.ofMillis(5))
              .until(this::relaySleepsOnEveryShard);
          append(app, 1);
          awaitStreamLength(appended, WAKE_DEADLINE.minusNanos(System.nanoTime() - start));
        }
      } finally {
        assertThat(relay.close(Duration.ofSeconds(10))).isTrue();
      }
      heard = counter.drain();
    }
    assertThat(foundAsleep).as("appends that found the relay asleep").isPositive();
    assertThat(heard).as("notifications, one per message appended while the relay slept").hasSize(foundAsleep)
        .containsOnly(topic);
    assertPublishedOnce(appended);
    assertThat(logs.warnings()).as("WARN and ERROR lines").isEmpty();
  }

  /**
   * Whether the relay's LISTEN session holds the wake lock of every shard of the topic: what an append tries before
   * it decides to notify (see {@code Notifications}).
   */
  private boolean relaySleepsOnEveryShard() {
    return env.queryLong("SELECT count(DISTINCT objid) " + WAKE_LOCKS + " AND mode = 'ExclusiveLock'"
        + " AND objid::bigint < ? AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        wakeLockKey(), (long) shards) == shards;
  }

  /** The test topic's wake lock key as {@code pg_locks} shows it: a two-key lock's first key is an unsigned oid. */
  private long wakeLockKey() {
    return Integer.toUnsignedLong(Notifications.lockKey(env.schema(), topic));
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
        if (!holdsWakeLockShared(tx)) {
          foundAsleep++;
        }
      } else {
        outbox.appendAll(tx, batch);
      }
      tx.commit();
    }
    appended += n;
  }

  /** Whether the append in {@code tx} took its shard's wake lock shared: the relay was awake, so it did not notify. */
  private boolean holdsWakeLockShared(Connection tx) throws SQLException {
    try (PreparedStatement ps = tx.prepareStatement("SELECT count(*) " + WAKE_LOCKS + " AND mode = 'ShareLock'"
        + " AND pid = pg_backend_pid()")) {
      ps.setLong(1, wakeLockKey());
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) > 0;
      }
    }
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
