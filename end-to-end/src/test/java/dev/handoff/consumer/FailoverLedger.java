package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.admin.TopicInspector.FailoverReport;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.RedisUrl;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.RelayListener;
import dev.handoff.testing.StreamingReplication;
import dev.handoff.testing.TestServers;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The payments ledger of {@link DatabaseFailoverTest}: its tables, producers, consumers and relay on the multi-host
 * URL, and the reads that count what a failover cost (payments charged once, never charged, orphan charges).
 */
final class FailoverLedger {

  static final String SCHEMA = "handoff";
  static final String TOPIC = "payments";
  static final Duration DEADLINE = Duration.ofSeconds(60);

  /** A rewind the relay reported. */
  record Rewound(ShardId shard, long entries) {}

  private FailoverLedger() {}

  /**
   * Pays p0, p1, ... on a thread of its own, each payment in a transaction with its message. A commit that fails
   * is uncertain (the primary may have committed it before it died): the same payment is tried again, and found if
   * it committed, which is safe because payment IDs are unique.
   */
  static final class Producer implements AutoCloseable {
    private final DataSource db;
    private final Outbox outbox;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile long committed;

    Producer(DataSource db, Outbox outbox) {
      this.db = db;
      this.outbox = outbox;
      this.thread = new Thread(this::run, "failover-producer");
    }

    void start() {
      thread.start();
    }

    long committed() {
      return committed;
    }

    void awaitCommitted(long n) {
      ConsumerTestKit.await(n + " payments committed", DEADLINE, () -> committed >= n);
    }

    void stop() throws InterruptedException {
      running = false;
      thread.join(DEADLINE.toMillis());
      assertThat(thread.isAlive()).isFalse();
    }

    @Override
    public void close() throws InterruptedException {
      stop();
    }

    private void run() {
      long next = 0;
      while (running) {
        try (Connection tx = db.getConnection()) {
          tx.setAutoCommit(false);
          try (PreparedStatement ps = tx.prepareStatement(
              "INSERT INTO payment (payment_id, amount_cents) VALUES (?, 100) ON CONFLICT DO NOTHING")) {
            ps.setString(1, "p" + next);
            if (ps.executeUpdate() == 1) {
              outbox.append(tx, Message.builder(TOPIC, "payment.created").key("p" + next).payload("{}").build());
            }
          }
          tx.commit();
          committed = ++next;
        } catch (SQLException | RuntimeException e) {
          // The database is failing over: the same payment again. No pause of its own is needed: while no server
          // accepts writes, the pool's getConnection waits (up to its connection timeout) for one that does.
          if (Thread.currentThread().isInterrupted()) {
            return;
          }
        }
      }
    }
  }

  static Set<String> outboxMessageIds(DataSource db) throws SQLException {
    Set<String> out = new HashSet<>();
    try (Connection c = db.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT message_id::text FROM " + SCHEMA + ".outbox")) {
      while (rs.next()) {
        out.add(rs.getString(1));
      }
    }
    return out;
  }

  static RelayBuilder relay(DataSource db, RedisConnectionSpec redis, String prefix, List<Rewound> rewinds) {
    return Relay.builder(db, redis).schema(SCHEMA).keyPrefix(prefix).topic(TopicConfig.of(TOPIC))
        .idlePollInterval(Duration.ofMillis(50)).listener(new RelayListener() {
          @Override
          public void databaseRewound(ShardId shard, long entries, String detail) {
            rewinds.add(new Rewound(shard, entries));
          }
        });
  }

  /**
   * handoff's schema and the ledger's tables on the new servers, and a group that keeps the stream whole; returns the
   * outbox.
   */
  static Outbox prepare(DataSource db, RedisClient redis, String prefix) throws SQLException {
    HandoffMigrations.migrate(db, SCHEMA);
    ledgerTables(db);
    keepEverything(redis, prefix);
    return Outbox.builder().schema(SCHEMA).build();
  }

  /**
   * A group that never reads: the relay trims only what every group finished, so the stream keeps every entry ever
   * added, and the test counts them exactly.
   */
  static void keepEverything(RedisClient redis, String prefix) {
    redis.xgroupCreate(stream(prefix), "audit", new StreamEntryID(0, 0), true);
  }

  static void ledgerTables(DataSource db) throws SQLException {
    execute(db, "CREATE TABLE payment (payment_id text PRIMARY KEY, amount_cents bigint NOT NULL)",
        "CREATE TABLE charge (id bigserial PRIMARY KEY, consumer_group text NOT NULL, payment_id text NOT NULL,"
            + " message_id uuid NOT NULL)");
  }

  static FailoverReport failoverReport(DataSource db, String prefix) {
    try (TopicInspector inspector = TopicInspector.builder(db,
        RedisConnectionSpec.of(RedisUrl.parse(TestServers.redis()))).schema(SCHEMA).keyPrefix(prefix).build()) {
      return inspector.failoverReport(TOPIC, 100);
    }
  }

  /** The message IDs of the first entries of payments p{from}..p{to-1}, in stream order, read from the stream. */
  static List<UUID> messageIds(List<StreamEntry> entries, int from, int to) {
    Set<String> keys = new HashSet<>();
    for (int i = from; i < to; i++) {
      keys.add("p" + i);
    }
    Set<UUID> out = new java.util.LinkedHashSet<>();
    for (StreamEntry e : entries) {
      if (keys.contains(e.getFields().get(StreamFormat.KEY))) {
        out.add(UUID.fromString(e.getFields().get(StreamFormat.MESSAGE_ID)));
      }
    }
    return List.copyOf(out);
  }

  static StreamConsumer consumer(DataSource db, String prefix, String group, boolean refuseGhosts) {
    return StreamConsumer.builder(db, RedisConnectionSpec.of(TestServers.redis())).schema(SCHEMA).keyPrefix(prefix)
        .topic(TopicConfig.of(TOPIC)).group(group).batchSize(10).block(Duration.ofMillis(100))
        .refuseGhosts(refuseGhosts)
        .handler((tx, m) -> {
          try (PreparedStatement ps = tx.prepareStatement(
              "INSERT INTO charge (consumer_group, payment_id, message_id) VALUES (?, ?, ?)")) {
            ps.setString(1, group);
            ps.setString(2, m.key());
            ps.setObject(3, m.messageId());
            ps.executeUpdate();
          }
        })
        .build();
  }

  /** Payments p{from}..p{from+n-1}, each in a transaction of its own with its message, as a web service commits. */
  static void pay(DataSource db, Outbox outbox, int from, int n) throws SQLException {
    for (int i = from; i < from + n; i++) {
      try (Connection tx = db.getConnection()) {
        tx.setAutoCommit(false);
        try (PreparedStatement ps = tx.prepareStatement(
            "INSERT INTO payment (payment_id, amount_cents) VALUES (?, 100)")) {
          ps.setString(1, "p" + i);
          ps.executeUpdate();
        }
        outbox.append(tx, Message.builder(TOPIC, "payment.created").key("p" + i).payload("{}").build());
        tx.commit();
      }
    }
  }

  /** Waits until the running relay published every row of the outbox. */
  static void awaitPublished(DataSource db) {
    ConsumerTestKit.await("every row published", DEADLINE, () -> {
      try {
        return count(db, "SELECT count(*) FROM " + SCHEMA + ".outbox WHERE published_at IS NULL") == 0;
      } catch (SQLException e) {
        return false;
      }
    });
  }

  static void pollTimes(StreamConsumer c, int times) {
    for (int i = 0; i < times; i++) {
      assertThat(c.pollOnce().handled()).isEqualTo(10);
    }
  }

  static void drain(StreamConsumer c) {
    for (int i = 0; i < 1_000; i++) {
      if (c.pollOnce().isEmpty()) {
        return;
      }
    }
    throw new AssertionError("consumer still busy after 1,000 polls");
  }

  /** Whether every payment has exactly one charge of the group. */
  static boolean chargedOnce(DataSource db, String group) throws SQLException {
    return count(db, "SELECT count(*) FROM payment p WHERE (SELECT count(*) FROM charge c WHERE c.consumer_group = '"
        + group + "' AND c.payment_id = p.payment_id) <> 1") == 0;
  }

  static long neverCharged(DataSource db, String group) throws SQLException {
    return count(db, "SELECT count(*) FROM payment p WHERE NOT EXISTS (SELECT 1 FROM charge c WHERE"
        + " c.consumer_group = '" + group + "' AND c.payment_id = p.payment_id)");
  }

  /** Charges of the group for payments that do not exist. */
  static long orphans(DataSource db, String group) throws SQLException {
    return count(db, "SELECT count(*) FROM charge c WHERE c.consumer_group = '" + group + "' AND NOT EXISTS"
        + " (SELECT 1 FROM payment p WHERE p.payment_id = c.payment_id)");
  }

  static void awaitPrimary(DataSource db) {
    ConsumerTestKit.await("the pool to reach the promoted standby", DEADLINE, () -> {
      try {
        return count(db, "SELECT CASE WHEN pg_is_in_recovery() THEN 0 ELSE 1 END") == 1;
      } catch (SQLException e) {
        return false;
      }
    });
  }

  static String stream(String prefix) {
    return StreamFormat.streamKey(prefix, TOPIC, 0);
  }

  static HikariDataSource pool(StreamingReplication pg) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(pg.jdbcUrl());
    config.setMaximumPoolSize(10);
    config.setConnectionTimeout(5_000);
    config.setPoolName("failover");
    return new HikariDataSource(config);
  }

  static void execute(DataSource db, String... statements) throws SQLException {
    try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }

  static long count(DataSource db, String sql) throws SQLException {
    try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
