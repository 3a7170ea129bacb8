package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.Health;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.migrations.HandoffGrants.Role;
import dev.handoff.testing.DatabaseRole;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.RestartableRedis;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * {@link Relay#health()} for each of its reasons, with real faults: Redis stopped, a revoked grant, a cycle that
 * keeps failing with rows waiting past the backlog threshold, a thread killed by an {@link Error}, a thread stuck
 * past two lease TTLs whose lease another relay then takes; DOWN before start and after close. Every wait is on a
 * condition with a deadline.
 */
@HandoffTest
class RelayHealthTest {

  private static final Duration DEADLINE = Duration.ofSeconds(30);

  private final TestEnvironment env;

  RelayHealthTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void fresh() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
  }

  @Test
  void downBeforeStartUpWhileRunningDownOnceClosed() throws Exception {
    Relay relay = relay(env.dataSource(), env.redis(), "health-life").build();
    assertThat(codes(relay.health())).containsExactly("not-started");
    assertThat(relay.health().status()).isEqualTo(Health.Status.DOWN);
    relay.relayOnce(); // driven by hand: still not started
    assertThat(codes(relay.health())).containsExactly("not-started");
    relay.close();

    try (Relay started = relay(env.dataSource(), env.redis(), "health-life").build()) {
      started.start();
      RelayTestSupport.append(env, "health-life", 5);
      await().atMost(DEADLINE).until(() -> RelayTestSupport.unpublished(env) == 0);
      assertThat(started.health()).isEqualTo(Health.UP);
      started.close();
      assertThat(started.health().status()).isEqualTo(Health.Status.DOWN);
      assertThat(codes(started.health())).containsExactly("closed");
    }
  }

  @Test
  void redisStoppedIsRedisUnreachableUntilItIsBack() throws Exception {
    RestartableRedis server = env.privateRedis();
    try (RedisClient redis = env.newRedisClient(server.uri());
        Relay relay = relay(env.dataSource(), redis, "health-redis").build()) {
      relay.start();
      RelayTestSupport.append(env, "health-redis", 5);
      await().atMost(DEADLINE).until(() -> RelayTestSupport.unpublished(env) == 0);
      assertThat(relay.health()).isEqualTo(Health.UP);

      server.stop();
      RelayTestSupport.append(env, "health-redis", 5);
      await().atMost(DEADLINE).until(() -> relay.health().has("redis-unreachable"));
      assertThat(relay.health().status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(codes(relay.health())).containsExactly("redis-unreachable");

      server.startAgain();
      await().atMost(DEADLINE).until(() -> RelayTestSupport.unpublished(env) == 0);
      await().atMost(DEADLINE).until(() -> relay.health().status() == Health.Status.UP);
    }
  }

  @Test
  void aRevokedGrantIsDatabaseUnreachableUntilGrantedAgain() throws Exception {
    try (DatabaseRole role = env.newRole().grant(Role.RELAY);
        HikariDataSource db = role.newDataSource(4);
        Relay relay = relay(db, env.redis(), "health-grant").build()) {
      relay.start();
      RelayTestSupport.append(env, "health-grant", 5);
      await().atMost(DEADLINE).until(() -> RelayTestSupport.unpublished(env) == 0);
      assertThat(relay.health()).isEqualTo(Health.UP);

      env.execute("REVOKE SELECT ON " + env.schema() + ".outbox FROM " + role.name());
      RelayTestSupport.append(env, "health-grant", 5);
      await().atMost(DEADLINE).until(() -> relay.health().has("database-unreachable"));
      Health h = relay.health();
      assertThat(h.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(codes(h)).containsExactly("database-unreachable");
      assertThat(h.reasons().get(0).message()).contains("permission denied");

      env.execute("GRANT SELECT ON " + env.schema() + ".outbox TO " + role.name());
      await().atMost(DEADLINE).until(() -> RelayTestSupport.unpublished(env) == 0);
      await().atMost(DEADLINE).until(() -> relay.health().status() == Health.Status.UP);
    }
  }

  @Test
  void rowsWaitingPastTheThresholdAreAnOldBacklogUntilPublished() throws Exception {
    AtomicBoolean failing = new AtomicBoolean(true);
    RelayFaults faults = new RelayFaults() {
      @Override
      public void beforeStreamWrite(ShardId shard, int rows) {
        if (failing.get()) {
          throw new IllegalStateException("simulated failure before the stream write");
        }
      }
    };
    try (Relay relay = relay(env.dataSource(), env.redis(), "health-backlog")
        .backlogAgeThreshold(Duration.ofMillis(300)).faults(faults).build()) {
      assertThat(relay.config().checks().backlogAgeThreshold()).isEqualTo(Duration.ofMillis(300));
      relay.start();
      RelayTestSupport.append(env, "health-backlog", 5);
      await().atMost(DEADLINE).until(() -> relay.health().has("backlog-old"));
      Health h = relay.health();
      assertThat(h.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(codes(h)).containsExactlyInAnyOrder("cycle-failing", "backlog-old");
      assertThat(reason(h, "backlog-old").message()).contains("health-backlog:0", "past the threshold of PT0.3S");
      assertThat(reason(h, "cycle-failing").message()).contains("simulated failure before the stream write");

      failing.set(false);
      await().atMost(DEADLINE).until(() -> RelayTestSupport.unpublished(env) == 0);
      await().atMost(DEADLINE).until(() -> relay.health().status() == Health.Status.UP);
    }
    assertThat(env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), "health-backlog", 0))).isEqualTo(5);
  }

  @Test
  void theBacklogCheckIsOffByDefault() {
    assertThat(relay(env.dataSource(), env.redis(), "health-default").build().config().checks().backlogAgeThreshold())
        .isEqualTo(Duration.ZERO);
  }

  @Test
  void aRelayThreadKilledByAnErrorIsDown() throws Exception {
    RelayFaults crash = new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        throw new SimulatedCrash("simulated crash after the stream write");
      }
    };
    try (Relay relay = relay(env.dataSource(), env.redis(), "health-dead").faults(crash).build()) {
      relay.start();
      RelayTestSupport.append(env, "health-dead", 5);
      await().atMost(DEADLINE).until(() -> relay.health().has("relay-thread-dead"));
      assertThat(relay.health().status()).isEqualTo(Health.Status.DOWN);
      assertThat(codes(relay.health())).containsExactly("relay-thread-dead");
    }
  }

  @Test
  void aThreadStuckPastTwoTtlsIsStuckAndThenHasLostItsLease() throws Exception {
    CountDownLatch inCycle = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    RelayFaults block = new RelayFaults() {
      @Override
      public void beforeStreamWrite(ShardId shard, int rows) {
        if (inCycle.getCount() > 0) {
          inCycle.countDown();
          try {
            release.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    };
    Duration ttl = Duration.ofMillis(500);
    RelayTestSupport.append(env, "health-stuck", 10);
    Relay stuck = relay(env.dataSource(), env.redis(), "health-stuck").owner("relay-stuck").leaseTtl(ttl)
        .faults(block).build();
    try (Relay successor = relay(env.dataSource(), env.redis(), "health-stuck").owner("relay-successor")
        .leaseTtl(ttl).build()) {
      stuck.start();
      assertThat(inCycle.await(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
      await().atMost(DEADLINE).until(() -> stuck.health().has("relay-stuck"));
      assertThat(stuck.health().status()).isEqualTo(Health.Status.DEGRADED);

      await().atMost(DEADLINE).until(() -> {
        successor.relayOnce();
        return !successor.ownedShards().isEmpty();
      });
      release.countDown();
      // Woken, it finds its lease taken: fenced, it stops writing that stream and says so. The loss is recorded in
      // the cycle and "relay-stuck" clears when the cycle ends: the state both reach, whatever runs between.
      await().atMost(DEADLINE).until(() -> stuck.health().has("leases-lost") && !stuck.health().has("relay-stuck"));
      Health h = stuck.health();
      assertThat(h.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(reason(h, "leases-lost").message()).contains("health-stuck:0");
      assertThat(codes(h)).doesNotContain("relay-stuck");
    } finally {
      release.countDown();
      stuck.close(Duration.ofSeconds(5));
    }
  }

  private RelayBuilder relay(DataSource db, RedisClient redis, String topic) {
    return Relay.builder(db, env.specOf(redis)).schema(env.schema()).keyPrefix(env.keyPrefix()).topic(TopicConfig.of(topic))
        .idlePollInterval(Duration.ofMillis(100));
  }

  private static List<String> codes(Health h) {
    return h.reasons().stream().map(Health.Reason::code).toList();
  }

  private static Health.Reason reason(Health h, String code) {
    return h.reasons().stream().filter(r -> r.code().equals(code)).findFirst().orElseThrow();
  }
}
