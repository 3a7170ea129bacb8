package dev.handoff.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.StreamFormat;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.StreamEntryID;

/** The standalone relay as a real process: started, fed while it runs, stopped with SIGTERM, restarted. */
@HandoffTest
class RelayProcessTest {

  private final TestEnvironment env;

  RelayProcessTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void sigtermDrainsAndExitsZeroAndARestartLeavesNothingUnpublished() throws Exception {
    String key = StreamFormat.streamKey(env.keyPrefix(), "orders", 0);
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    AtomicBoolean producing = new AtomicBoolean(true);
    AtomicLong appended = new AtomicLong();
    Thread producer = new Thread(() -> {
      while (producing.get()) {
        try (Connection tx = env.dataSource().getConnection()) {
          tx.setAutoCommit(false);
          outbox.append(tx, Message.builder("orders", "order.placed").payload("x").build());
          tx.commit();
          appended.incrementAndGet();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }
    });

    Process relay = startRelay("first");
    producer.start();
    await().atMost(Duration.ofSeconds(30)).until(() -> env.redis().xlen(key) > 200);

    relay.destroy(); // SIGTERM
    // A deadline for a hang, not a timing assertion: the drain itself is bounded by the relay's 10 s deadline.
    assertThat(relay.waitFor(60, TimeUnit.SECONDS)).as("exits after SIGTERM").isTrue();
    assertThat(relay.exitValue()).isZero();
    assertThat(env.queryLong("select count(*) from relay_lease where batch_ids is not null"))
        .as("batches assigned but not published after a clean stop").isZero();
    assertThat(env.queryLong("select count(*) from relay_lease where owner is not null")).as("lease released")
        .isZero();

    producing.set(false);
    producer.join(Duration.ofSeconds(30).toMillis());
    assertThat(producer.isAlive()).as("the producer stopped").isFalse();
    Process second = startRelayFromEnvironment("second");
    await().atMost(Duration.ofSeconds(30))
        .until(() -> env.queryLong("select count(*) from outbox where published_at is null") == 0);
    second.destroy();
    assertThat(second.waitFor(15, TimeUnit.SECONDS)).isTrue();
    assertThat(second.exitValue()).isZero();

    List<String> entryIds = env.redis().xrange(key, "-", "+").stream().map(e -> e.getID().toString()).toList();
    assertThat(entryIds).as("one entry per row, in stream ID order").hasSize((int) appended.get())
        .isSortedAccordingTo(Comparator.comparing(StreamEntryID::new))
        .containsExactlyInAnyOrderElementsOf(env.queryList(
            "select stream_ms || '-' || stream_seq from outbox where topic = 'orders'", String.class));
  }

  @Test
  void badUrlIsOneClearLineAndANonZeroExit() throws Exception {
    ProcessBuilder pb = command("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=u&password=hunter2",
        "--redis-url", env.redisUri().toString(), "--topics", "orders", "--connect-timeout", "0s");
    Path err = Files.createTempFile("relay", ".err");
    pb.redirectError(err.toFile()).redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Process p = pb.start();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isNotZero();
    List<String> lines = Files.readAllLines(err);
    assertThat(lines).hasSize(1);
    assertThat(lines.get(0)).startsWith("handoff: cannot connect to PostgreSQL at").doesNotContain("hunter2")
        .contains("password=***");
  }

  @Test
  void aRelayStartedBeforeItsRedisWaitsWithinTheConnectTimeoutThenPublishes() throws Exception {
    RestartableRedis redis = env.privateRedis();
    redis.stop();
    Path log = Files.createTempFile("relay-waits", ".log");
    ProcessBuilder pb = command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", redis.uri().toString(),
        "--topics", "waited", "--schema", env.schema(), "--key-prefix", env.keyPrefix(), "--lease-ttl", "PT5S",
        "--connect-timeout", "120s");
    pb.redirectErrorStream(true).redirectOutput(log.toFile());
    Process relay = pb.start();
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> Files.readString(log).contains("waiting up to 120000 ms for"
          + " Redis"));
      assertThat(relay.isAlive()).isTrue();
      redis.startAgain();
      Outbox outbox = Outbox.builder().schema(env.schema()).build();
      try (Connection tx = env.dataSource().getConnection()) {
        tx.setAutoCommit(false);
        for (int i = 0; i < 10; i++) {
          outbox.append(tx, Message.builder("waited", "order.placed").payload("x").build());
        }
        tx.commit();
      }
      try (var client = env.newRedisClient(redis.uri())) {
        String key = StreamFormat.streamKey(env.keyPrefix(), "waited", 0);
        await().atMost(Duration.ofSeconds(30)).until(() -> client.exists(key) && client.xlen(key) == 10);
      }
    } finally {
      relay.destroy();
    }
    assertThat(relay.waitFor(15, TimeUnit.SECONDS)).isTrue();
    assertThat(relay.exitValue()).as(Files.readString(log)).isZero();
    assertThat(Files.readAllLines(log).stream().filter(l -> l.contains("waiting up to"))).hasSize(1);
  }

  @Test
  void theHealthFileSaysUpWhileRunningAndDownOnceStopped() throws Exception {
    Path health = Files.createTempDirectory("relay-health").resolve("health");
    ProcessBuilder pb = command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
        "--topics", "health-file", "--schema", env.schema(), "--key-prefix", env.keyPrefix(),
        "--health-file", health.toString(), "--backlog-age-threshold", "10s");
    Process relay = start(pb, "health");
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(health)
          && Files.readAllLines(health).equals(List.of("UP")));
    } finally {
      relay.destroy(); // SIGTERM
    }
    assertThat(relay.waitFor(15, TimeUnit.SECONDS)).isTrue();
    assertThat(relay.exitValue()).isZero();
    List<String> last = Files.readAllLines(health);
    assertThat(last.get(0)).isEqualTo("DOWN");
    assertThat(last).hasSize(2);
    assertThat(last.get(1)).startsWith("closed: relay ");
  }

  private Process startRelay(String name) throws Exception {
    ProcessBuilder pb = command("--jdbc-url", env.postgres().jdbcUrl(), "--redis-url", env.redisUri().toString(),
        "--topics", "orders", "--schema", env.schema(), "--key-prefix", env.keyPrefix(),
        "--lease-ttl", "PT5S", "--drain-timeout", "PT10S");
    return start(pb, name);
  }

  /** The same relay configured by environment variables alone, as a container would run it. */
  private Process startRelayFromEnvironment(String name) throws Exception {
    ProcessBuilder pb = command();
    pb.environment().putAll(Map.of("HANDOFF_JDBC_URL", env.postgres().jdbcUrl(),
        "HANDOFF_REDIS_URL", env.redisUri().toString(), "HANDOFF_TOPICS", "orders", "HANDOFF_SCHEMA", env.schema(),
        "HANDOFF_KEY_PREFIX", env.keyPrefix(), "HANDOFF_LEASE_TTL", "PT5S", "HANDOFF_DRAIN_TIMEOUT", "PT10S",
        "HANDOFF_MIGRATE", "true"));
    return start(pb, name);
  }

  private static Process start(ProcessBuilder pb, String name) throws Exception {
    File log = Files.createTempFile("relay-" + name, ".log").toFile();
    pb.redirectErrorStream(true).redirectOutput(log);
    return pb.start();
  }

  private static ProcessBuilder command(String... args) {
    return HandoffProcess.relay(args);
  }
}
