package dev.handoff.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Notifications;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.NotificationCounter;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Appends wake a relay without making every appending transaction notify (a NOTIFY serializes the commits that
 * carry one): an append notifies only while its shard's relay sleeps, and a relay sleeps only once no appending
 * transaction of its shards is open. What is counted is what PostgreSQL delivered to a LISTEN session of the test's
 * own, read up to a marker notification, so no time window decides what is seen.
 */
@HandoffTest
class AppendWakeUpTest {

  private static final Duration DEADLINE = Duration.ofSeconds(30);
  private static final ShardId PAYMENTS = new ShardId("payments", 0);

  private final TestEnvironment env;
  private Outbox outbox;
  private HikariDataSource listenPool;
  private NotificationListener listener;
  private Waiter waiter;
  private Thread thread;

  AppendWakeUpTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void start() {
    env.execute("TRUNCATE " + env.schema() + ".outbox");
    outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("payments")).topic(TopicConfig.of("refunds"))
        .build();
    listenPool = env.newDataSource(2);
    waiter = new Waiter();
    listener = new NotificationListener(listenPool, env.dataSource(), env.schema(), Set.of("payments", "refunds"),
        waiter, "wake-test", Duration.ofSeconds(1));
    thread = new Thread(listener, "wake-test-listener");
    thread.setDaemon(true);
    thread.start();
    await().atMost(DEADLINE).until(listener::hearing);
  }

  @AfterEach
  void stop() throws InterruptedException {
    listener.stop();
    thread.join(DEADLINE.toMillis());
    listenPool.close();
  }

  @Test
  void anAppendNotifiesOnlyWhileItsShardsRelaySleepsAndTheFirstOneWakesIt() throws Exception {
    try (NotificationCounter counter = listen()) {

      appendEach(100, "payments");
      appendBatch(20, "payments", "refunds");
      assertThat(counter.drain()).as("notifications from 120 appends to an awake relay").isEmpty();

      fallAsleepOn(Set.of(PAYMENTS));
      appendEach(1, "refunds");
      assertThat(counter.drain()).as("an append to a shard nobody sleeps on").isEmpty();

      appendEach(1, "payments");
      assertThat(counter.drain()).as("the first append to the sleeping shard")
          .containsExactly("payments");
      // The listener heard it, woke the relay and gave its lock back: the appends that follow notify nothing.
      await().atMost(DEADLINE).until(() -> !listener.asleepOn(Set.of(PAYMENTS)));
      appendEach(100, "payments");
      assertThat(counter.drain()).as("appends after the relay woke").isEmpty();
      assertThat(env.queryLong("SELECT (pg_notification_queue_usage() * 1e6)::bigint")).as("queue usage").isZero();
    }
  }

  @Test
  void aBatchToASleepingShardNotifiesOnceAndARolledBackOneNotAtAll() throws Exception {
    try (NotificationCounter counter = listen()) {
      fallAsleepOn(Set.of(PAYMENTS, new ShardId("refunds", 0)));

      try (Connection tx = transaction()) {
        outbox.append(tx, Message.builder("payments", "payment.created").build());
        tx.rollback();
      }
      assertThat(counter.drain()).as("a rolled-back append").isEmpty();
      assertThat(listener.asleepOn(Set.of(PAYMENTS, new ShardId("refunds", 0)))).isTrue();

      appendBatch(30, "payments", "refunds");
      assertThat(counter.drain()).as("one batch to two sleeping shards")
          .containsExactlyInAnyOrder("payments", "refunds");
    }
  }

  @Test
  void anOpenAppendingTransactionKeepsTheRelayAwakeUntilItEnds() throws Exception {
    try (Connection open = transaction()) {
      outbox.append(open, Message.builder("payments", "payment.created").build());
      drainWakeUps();
      listener.requestSleep(Set.of(PAYMENTS));
      assertThat(waiter.await(DEADLINE.toMillis())).as("the listener answers the request").isTrue();
      assertThat(listener.asleepOn(Set.of(PAYMENTS)))
          .as("asleep while an append it cannot see yet holds the shard's key").isFalse();
      open.commit();
    }
    // Committed: the relay's next look sees the row, so it may sleep now.
    fallAsleepOn(Set.of(PAYMENTS));
  }

  @Test
  void aRelayWhoseListenSessionDiesMidSleepStillPublishesEveryRowOnce() throws Exception {
    HikariDataSource pool = env.newDataSource(4);
    String topic = "wake_lost";
    Outbox writer = Outbox.builder().schema(env.schema()).topic(TopicConfig.of(topic)).build();
    Duration idlePoll = Duration.ofMillis(300);
    try (Relay relay = Relay.builder(pool, env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic)).idlePollInterval(idlePoll).build()) {
      relay.start();
      DefaultRelay internals = (DefaultRelay) relay;
      await().atMost(DEADLINE).until(internals::asleep);
      int backend = internals.listeningBackend();
      env.queryLong("SELECT CASE WHEN pg_terminate_backend(?) THEN 1 ELSE 0 END", backend);
      // Its session's locks are gone once the backend is: from then on appends cannot notify it.
      await().atMost(DEADLINE).until(() -> env.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = ?",
          backend) == 0);
      long start = System.nanoTime();
      append(writer, topic, "lost-1");
      awaitStreamLength(topic, 1);
      System.out.printf("a row appended while the LISTEN session was gone: published after %d ms (idle poll %d"
          + " ms)%n", (System.nanoTime() - start) / 1_000_000, idlePoll.toMillis());

      // A row nothing announces (written without an append) while the relay sleeps: the safety-net poll finds it.
      await().atMost(DEADLINE).until(internals::asleep);
      start = System.nanoTime();
      try (Connection c = env.dataSource().getConnection();
          PreparedStatement ps = c.prepareStatement("INSERT INTO " + env.schema() + ".outbox (message_id, topic,"
              + " shard, type, payload) VALUES (?, ?, 0, 'order.placed', '\\x00'::bytea)")) {
        ps.setObject(1, UUID.randomUUID());
        ps.setString(2, topic);
        ps.execute();
      }
      awaitStreamLength(topic, 2);
      System.out.printf("a row written without an append while the relay slept: published after %d ms (bound %d"
          + " ms)%n", (System.nanoTime() - start) / 1_000_000, idlePoll.toMillis() * CyclePacing.HEARING_POLL_FACTOR);
    }
    assertThat(env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), topic, 0))).isEqualTo(2);
    assertThat(env.queryLong("SELECT count(*) FROM " + env.schema() + ".outbox WHERE topic = ?"
        + " AND published_at IS NOT NULL", topic)).isEqualTo(2);
    pool.close();
  }

  private void fallAsleepOn(Set<ShardId> shards) {
    listener.requestSleep(shards);
    await().atMost(DEADLINE).until(() -> listener.asleepOn(shards));
  }

  private void drainWakeUps() throws InterruptedException {
    while (waiter.await(0)) {
      // a wake-up from hearing, or from an earlier request
    }
  }

  private void appendEach(int n, String topic) throws SQLException {
    for (int i = 0; i < n; i++) {
      append(outbox, topic, topic + "-" + i);
    }
  }

  private void append(Outbox to, String topic, String key) throws SQLException {
    try (Connection tx = transaction()) {
      to.append(tx, Message.builder(topic, "payment.created").key(key).build());
      tx.commit();
    }
  }

  private void appendBatch(int n, String... topics) throws SQLException {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(Message.builder(topics[i % topics.length], "payment.created").key("b" + i).build());
    }
    try (Connection tx = transaction()) {
      outbox.appendAll(tx, batch);
      tx.commit();
    }
  }

  private void awaitStreamLength(String topic, long length) {
    await("stream length " + length).atMost(DEADLINE).pollInterval(Duration.ofMillis(5))
        .until(() -> env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), topic, 0)) >= length);
  }

  private Connection transaction() throws SQLException {
    Connection c = env.dataSource().getConnection();
    c.setAutoCommit(false);
    return c;
  }

  private NotificationCounter listen() throws SQLException {
    return NotificationCounter.listen(env, Notifications.channel(env.schema()), DEADLINE);
  }
}
