package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.handoff.core.ListFormat;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Closing and rebalancing a relay that holds rows it cannot send: rows re-published after Redis lost a list, more of
 * them than the list has room for, so the list refuses them (NOT_SENT) until consumers make room.
 */
@HandoffTest
class RelayLifecycleTest {

  private static final List<String> TOPICS = List.of("jobs-a", "jobs-b");
  private static final int CAPACITY = 5;

  private final TestEnvironment env;

  RelayLifecycleTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    for (String topic : TOPICS) {
      String list = list(topic);
      env.redis().del(list, ListFormat.relayKey(list), ListFormat.consumersKey(list));
    }
  }

  @Test
  void closeDrainsForTheCallersTimeAndReturnsOnlyOnceItsThreadStoppedAndASecondCloseSaysTheSame() throws Exception {
    // The configured drain time is far longer than the caller's: close must use the caller's.
    Relay relay = relay().drainTimeout(Duration.ofSeconds(20)).build();
    holdRowsTheListsCannotTake(relay);
    relay.start();

    boolean drained = relay.close(Duration.ofMillis(500));

    assertThat(drained).as("rows were left for the next owner").isFalse();
    assertThat(threadsNamed("handoff-relay-" + relay.config().owner())).as("the relay's threads once close returned")
        .isEmpty();
    assertThat(relay.close(Duration.ofMillis(500))).as("a second close reports the first close's outcome").isFalse();
    assertThat(env.queryLong("select count(*) from relay_lease where owner is not null"))
        .as("leases given back for a successor to take at once").isZero();
    assertThatThrownBy(relay::relayOnce).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    assertEverythingArrivesThroughASuccessor();
  }

  @Test
  void aRelayWhoseRowsCannotGoStillGivesAShardUpToANewPeer() throws Exception {
    // Preemptive: a relay that waits for room holds its work lock for good, and its close would wait for it too.
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      try (Relay relay = relay().build()) {
        holdRowsTheListsCannotTake(relay);
        assertThat(relay.ownedShards()).hasSize(2);
        env.execute("INSERT INTO relay_member (owner) VALUES ('a-new-peer')");

        relay.relayOnce(); // the rebalance: one shard goes to the new peer

        assertThat(relay.ownedShards()).hasSize(1);
        assertThat(env.queryLong("select count(*) from relay_lease where owner is null")).isEqualTo(1);
      }
    }, "the rebalance must not wait for room in the list");
    env.execute("DELETE FROM relay_member WHERE owner = 'a-new-peer'");
    assertEverythingArrivesThroughASuccessor();
  }

  @Test
  void anErrorThrownByAListenerIsLoggedAndTheStartedRelayCarriesOn() throws Exception {
    AtomicBoolean thrown = new AtomicBoolean();
    String key = StreamFormat.streamKey(env.keyPrefix(), "errors", 0);
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("errors")).idlePollInterval(Duration.ofMillis(50))
        .listener(new RelayListener() {
          @Override
          public void published(ShardId shard, int rows, long oldestCreatedAtMillis) {
            if (thrown.compareAndSet(false, true)) {
              throw new StackOverflowError("a listener's bug");
            }
          }
        }).build()) {
      relay.start();
      RelayTestSupport.append(env, "errors", 10);
      await().atMost(Duration.ofSeconds(20)).until(() -> env.redis().exists(key) && env.redis().xlen(key) == 10);
      assertThat(thrown).isTrue();
      // The relay's thread survived the Error: what comes next is published too.
      RelayTestSupport.append(env, "errors", 5);
      await().atMost(Duration.ofSeconds(20)).until(() -> env.redis().xlen(key) == 15);
      assertThat(threadsNamed("handoff-relay-" + relay.config().owner())).isNotEmpty();
    }
    assertThat(env.queryLong("select count(*) from outbox where topic = 'errors' and published_at is null")).isZero();
  }

  /**
   * Ten rows per topic go through a list of capacity 5 (consumers finish the first five), then Redis loses the lists:
   * the relay re-publishes all ten with their IDs, five fit, five are refused for want of room.
   */
  private void holdRowsTheListsCannotTake(Relay relay) throws Exception {
    for (String topic : TOPICS) {
      RelayTestSupport.append(env, topic, 10);
    }
    relay.relayOnce();
    for (String topic : TOPICS) {
      assertThat(env.redis().llen(list(topic))).isEqualTo(CAPACITY);
      env.redis().del(list(topic)); // consumers finished the first five
    }
    relay.relayOnce();
    for (String topic : TOPICS) {
      assertThat(env.redis().llen(list(topic))).isEqualTo(CAPACITY);
      env.redis().del(list(topic), ListFormat.relayKey(list(topic))); // Redis lost the list and its bookkeeping
    }
    relay.relayOnce();
    for (String topic : TOPICS) {
      assertThat(env.redis().llen(list(topic))).as("re-published, as many as fit").isEqualTo(CAPACITY);
    }
    assertThat(env.queryLong("select count(*) from outbox where published_at is null and stream_ms is not null"))
        .as("re-published rows the full lists refused, keeping their IDs").isEqualTo(10);
  }

  /** Consumers make room and a second relay publishes what was left: every row published, in ID order per list. */
  private void assertEverythingArrivesThroughASuccessor() {
    try (Relay successor = relay().build()) {
      for (String topic : TOPICS) {
        env.redis().del(list(topic));
      }
      successor.relayOnce();
      for (String topic : TOPICS) {
        assertThat(env.redis().llen(list(topic))).isEqualTo(CAPACITY);
      }
    }
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();
  }

  private RelayBuilder relay() {
    RelayBuilder b = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .listTransport(CAPACITY).leaseTtl(Duration.ofSeconds(30)).idlePollInterval(Duration.ofMillis(50));
    TOPICS.forEach(t -> b.topic(TopicConfig.of(t)));
    return b;
  }


  private String list(String topic) {
    return ListFormat.listKey(env.keyPrefix(), topic, 0);
  }

  private static List<String> threadsNamed(String prefix) {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
        .filter(n -> n.startsWith(prefix)).toList();
  }
}
