package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.ListFormat;
import dev.handoff.core.StreamFormat;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RedisCluster;
import dev.handoff.testing.TestEnvironment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/**
 * The end-to-end audit on a Redis Cluster of 3 masters and 3 replicas, with real processes: one relay JVM and two
 * consumer JVMs ({@link ClusterAuditMain}) move 10,000 payments over the 8 shards of {@code payments}, which land
 * on all three masters, while the test SIGKILLs the relay (stalled after writing a third of the payments to Redis
 * and before recording its last batch) and one consumer (half charged, its handler stalled inside a batch
 * transaction) and starts each again, the consumer under the same name. In the end every payment is charged once,
 * and Redis holds one entry (or pushed one element) per outbox row, by its own count beside each shard.
 */
@HandoffTest
class ClusterAuditTest {

  private static final int PAYMENTS = 10_000;
  private static final int ROWS_PER_TRANSACTION = 5;
  private static final Duration APPEND_PAUSE = Duration.ofMillis(2); // the latches, not the pace, decide where the kills land
  /** The first c1 stalls in its handler after this many messages, and is SIGKILLed there (relay-1: a third). */
  private static final int STALL_AFTER = 1_500;

  private static RedisCluster cluster;

  private final TestEnvironment env;
  private final List<Child> children = new ArrayList<>();

  ClusterAuditTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeAll
  static void startCluster() {
    cluster = RedisCluster.start();
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @BeforeEach
  void cleanSlate() {
    env.execute("DROP TABLE IF EXISTS charge",
        "CREATE TABLE charge (payment_id text NOT NULL, charged_at timestamptz NOT NULL DEFAULT now())",
        "TRUNCATE outbox, inbox, dead_letter, relay_lease, relay_member");
    for (HostAndPort master : cluster.masters()) {
      try (Jedis node = cluster.admin(master)) {
        node.flushAll();
      }
    }
  }

  @Test
  void tenThousandPaymentsOverEightShardsOnThreeMastersWithARelayAndAConsumerSigkilledAreChargedOnceAndAddedOnce()
      throws Exception {
    run("stream", () -> {
      try (RedisClusterClient redis = cluster.newClient()) {
        long entries = 0;
        for (int shard = 0; shard < 8; shard++) {
          String stream = StreamFormat.streamKey(env.keyPrefix(), "payments", shard);
          long rows = env.queryLong("SELECT count(*) FROM outbox WHERE shard = ?", shard);
          assertThat(redis.xlen(stream)).as("XLEN of shard " + shard).isEqualTo(rows);
          assertThat(redis.hget(StreamFormat.relayKey(stream), "added")).as("added of shard " + shard)
              .isEqualTo(String.valueOf(rows));
          assertThat(redis.xpending(stream, ClusterAuditMain.GROUP).getTotal()).as("pending on shard " + shard)
              .isZero();
          entries += redis.xlen(stream);
        }
        assertThat(entries).isEqualTo(PAYMENTS);
      }
    });
  }

  @Test
  void theListTransportOnTheClusterPassesTheSameAuditWithEveryListAndProcessingListEmpty() throws Exception {
    run("list", () -> {
      try (RedisClusterClient redis = cluster.newClient()) {
        long pushed = 0;
        for (int shard = 0; shard < 8; shard++) {
          String list = ListFormat.listKey(env.keyPrefix(), "payments", shard);
          long rows = env.queryLong("SELECT count(*) FROM outbox WHERE shard = ?", shard);
          assertThat(redis.llen(list)).as("waiting on shard " + shard).isZero();
          String added = redis.hget(ListFormat.relayKey(list), "added");
          assertThat(added).as("pushed on shard " + shard).isEqualTo(String.valueOf(rows));
          pushed += Long.parseLong(added);
        }
        assertThat(pushed).isEqualTo(PAYMENTS);
      }
      // An empty list is no key in Redis: read the processing lists the shards' registries name.
      Map<String, Long> processing = registeredProcessingLists();
      assertThat(processing).as("processing lists of c1 (restarted) and c2, 2 workers each, on 8 shards")
          .hasSize(32);
      assertThat(processing.values()).as("processing lists " + processing).allMatch(length -> length == 0);
    });
  }

  /**
   * Appends the payments while the processes run, kills and restarts them, waits until everything is charged and
   * checks the database side of the audit, then {@code redisAudit}, all while the processes still run.
   */
  private void run(String transport, Runnable redisAudit) throws Exception {
    Set<HostAndPort> owners = new HashSet<>();
    for (int shard = 0; shard < 8; shard++) {
      owners.add(cluster.nodeForKey(StreamFormat.streamKey(env.keyPrefix(), "payments", shard)));
    }
    assertThat(owners).as("masters owning the 8 shards").containsExactlyInAnyOrderElementsOf(cluster.masters())
        .hasSize(3);

    CountDownLatch relayKilled = new CountDownLatch(1);
    CountDownLatch consumerKilled = new CountDownLatch(1);
    ExecutorService appending = Executors.newSingleThreadExecutor();
    try {
      start("relay", transport, "relay-1", PAYMENTS / 3);
      start("consumer", transport, "c1", STALL_AFTER);
      Child c2 = start("consumer", transport, "c2");
      Future<?> appender = appending.submit(() -> append(relayKilled, consumerKilled));

      // Killed while it stalls after writing a third of the payments to Redis and before recording the last batch.
      await("a third of the payments written by relay-1").atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(50)).until(() -> Files.readString(children.get(0).log).contains("stalling"));
      children.get(0).kill();
      relayKilled.countDown();
      long publishedAtKill = published();
      long inRedisAtKill = addedInRedis(transport);
      assertThat(inRedisAtKill).as("rows in Redis when relay-1 died").isGreaterThanOrEqualTo(PAYMENTS / 3)
          .isGreaterThan(publishedAtKill);
      System.out.println("relay-1 SIGKILLed with " + inRedisAtKill + " rows in Redis, " + publishedAtKill
          + " recorded as published");
      start("relay", transport, "relay-2");

      // Killed while its handler stalls inside a batch transaction, so that its restart has entries to take back.
      await("half of the payments charged, c1 stalled").atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(50))
          .until(() -> env.queryLong("SELECT count(*) FROM charge") >= PAYMENTS / 2
              && Files.readString(children.get(1).log).contains("stalling"));
      children.get(1).kill();
      consumerKilled.countDown();
      long held = heldBy("c1", transport);
      assertThat(held).as("entries the SIGKILLed c1 held").isPositive();
      System.out.println("c1 SIGKILLed holding " + held + " " + transport + " entries");
      start("consumer", transport, "c1");

      appender.get(60, TimeUnit.SECONDS);
      await("every payment charged").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .until(() -> env.queryLong("SELECT count(DISTINCT payment_id) FROM charge") >= PAYMENTS);
      // The acknowledgements follow the commits; wait for them before reading what is left in Redis.
      await("nothing left in Redis").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
          .until(() -> transport.equals("stream") ? nothingPending() : registeredProcessingLists().values().stream()
              .allMatch(length -> length == 0));

      assertThat(c2.process.isAlive()).as("the consumer never killed is still running").isTrue();
      assertThat(env.queryLong("SELECT count(*) FROM outbox")).isEqualTo(PAYMENTS);
      assertThat(published()).isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(DISTINCT shard) FROM outbox")).isEqualTo(8);
      assertThat(env.queryLong("SELECT count(*) FROM charge")).as("charges").isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(DISTINCT payment_id) FROM charge")).isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(*) FROM charge c WHERE NOT EXISTS "
          + "(SELECT 1 FROM outbox o WHERE o.message_key = c.payment_id)")).as("charges of unknown payments").isZero();
      assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = ? AND outcome = 'processed'",
          ClusterAuditMain.GROUP)).as("inbox markers").isEqualTo(PAYMENTS);
      assertThat(env.queryLong("SELECT count(*) FROM dead_letter")).as("dead letters").isZero();
      assertThat(env.queryList("SELECT DISTINCT owner FROM relay_lease", String.class))
          .as("the second relay took every shard over").containsExactly("relay-2");
      redisAudit.run();
    } catch (Throwable t) {
      for (Child child : children) {
        System.out.println("==== " + child.name + " (" + child.log + ")");
        System.out.println(Files.readString(child.log));
      }
      throw t;
    } finally {
      relayKilled.countDown();
      consumerKilled.countDown();
      appending.shutdownNow();
      appending.awaitTermination(30, TimeUnit.SECONDS);
      for (Child child : children) {
        child.stop();
      }
    }
  }

  /**
   * Appends the payments at a steady pace, a few per transaction, each keyed by its payment ID so that they spread
   * over the shards; holds at half until the relay was killed, and at three quarters until a consumer was, so
   * that each kill lands with work still to come.
   */
  private void append(CountDownLatch relayKilled, CountDownLatch consumerKilled) {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(ClusterAuditMain.TOPIC).build();
    try {
      for (int i = 0; i < PAYMENTS; i += ROWS_PER_TRANSACTION) {
        if (i == PAYMENTS / 2) {
          relayKilled.await();
        }
        if (i == PAYMENTS * 3 / 4) {
          consumerKilled.await();
        }
        try (Connection tx = env.dataSource().getConnection()) {
          tx.setAutoCommit(false);
          for (int j = i; j < i + ROWS_PER_TRANSACTION; j++) {
            String payment = "pay-" + j;
            outbox.append(tx, Message.builder("payments", "payment.created").key(payment)
                .payload("{\"payment\":\"" + payment + "\",\"cents\":" + (100 + j) + "}").build());
          }
          tx.commit();
        }
        Thread.sleep(APPEND_PAUSE.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      throw new IllegalStateException("appending payments failed", e);
    }
  }

  private long published() {
    return env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NOT NULL");
  }

  private boolean nothingPending() {
    try (RedisClusterClient redis = cluster.newClient()) {
      for (int shard = 0; shard < 8; shard++) {
        String stream = StreamFormat.streamKey(env.keyPrefix(), "payments", shard);
        if (!redis.exists(stream) || redis.xpending(stream, ClusterAuditMain.GROUP).getTotal() > 0) {
          return false;
        }
      }
      return true;
    }
  }

  /** The relays' own count, beside each shard, of the entries added (or elements pushed), over the 8 shards. */
  private long addedInRedis(String transport) {
    long added = 0;
    try (RedisClusterClient redis = cluster.newClient()) {
      for (int shard = 0; shard < 8; shard++) {
        String stream = StreamFormat.streamKey(env.keyPrefix(), "payments", shard);
        String relayKey = transport.equals("stream") ? StreamFormat.relayKey(stream)
            : ListFormat.relayKey(ListFormat.listKey(env.keyPrefix(), "payments", shard));
        String value = redis.hget(relayKey, "added");
        added += value == null ? 0 : Long.parseLong(value);
      }
    }
    return added;
  }

  /** Every processing list the registries of the topic's 8 lists name, with its length. */
  private Map<String, Long> registeredProcessingLists() {
    Map<String, Long> lengths = new LinkedHashMap<>();
    try (RedisClusterClient redis = cluster.newClient()) {
      for (int shard = 0; shard < 8; shard++) {
        String list = ListFormat.listKey(env.keyPrefix(), "payments", shard);
        for (String processing : redis.hkeys(ListFormat.consumersKey(list))) {
          lengths.put(processing, redis.llen(processing));
        }
      }
    }
    return lengths;
  }

  /** The entries consumer {@code name}'s two workers hold: pending in the group, or in their processing lists. */
  private long heldBy(String name, String transport) {
    long held = 0;
    try (RedisClusterClient redis = cluster.newClient()) {
      for (int shard = 0; shard < 8; shard++) {
        for (int worker = 0; worker < 2; worker++) {
          String consumer = name + "-" + worker;
          if (transport.equals("stream")) {
            String stream = StreamFormat.streamKey(env.keyPrefix(), "payments", shard);
            if (redis.exists(stream)) {
              Map<String, Long> counts = redis.xpending(stream, ClusterAuditMain.GROUP).getConsumerMessageCount();
              held += counts == null ? 0 : counts.getOrDefault(consumer, 0L);
            }
          } else {
            held += redis.llen(ListFormat.processingKey(ListFormat.listKey(env.keyPrefix(), "payments", shard),
                consumer));
          }
        }
      }
    }
    return held;
  }

  private Child start(String role, String transport, String name) throws Exception {
    return start(role, transport, name, 0);
  }

  private Child start(String role, String transport, String name, int stallAfter) throws Exception {
    Path log = Files.createTempFile("cluster-audit-" + name + "-", ".log");
    String seeds = cluster.seeds().stream().map(HostAndPort::toString).collect(Collectors.joining(","));
    List<String> command = List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
        "-cp", System.getProperty("java.class.path"), ClusterAuditMain.class.getName(),
        role, transport, env.postgres().jdbcUrl(), String.valueOf(env.postgres().user()),
        String.valueOf(env.postgres().password()), env.schema(), env.keyPrefix(), seeds, name,
        String.valueOf(stallAfter));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    Child child = new Child(role + " " + name, process, log);
    children.add(child);
    return child;
  }

  /** A child JVM and its log file. */
  private record Child(String name, Process process, Path log) {

    /** SIGKILL: no shutdown hook runs, nothing is closed or released. */
    void kill() throws InterruptedException {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGTERM, then SIGKILL if it has not stopped within 15 s; deletes the log. */
    void stop() throws Exception {
      if (process.isAlive()) {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
          process.destroyForcibly();
          process.waitFor(10, TimeUnit.SECONDS);
        }
      }
      Files.deleteIfExists(log);
    }
  }
}
