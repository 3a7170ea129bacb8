package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.Health;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.LogCapture;
import dev.handoff.testing.TestEnvironment;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A database that went back in time, as after a failover to an asynchronous standby that had not received the last
 * commits: the stream holds entries of rows the database no longer has, and its lease row records fewer entries added
 * and a lower last ID than the stream. The relay says so, as a rewind (an ERROR line, its listener and metric, and a
 * DEGRADED {@code database-rewound} health), whether it takes the lease afresh or was publishing all along, and goes
 * on above the stream's top: every row the database has is published once.
 */
@HandoffTest
class DatabaseRewindTest {

  private static final String REWIND_LINE = "(Redis counts 15 added, the database 10)";

  private final TestEnvironment env;

  DatabaseRewindTest(TestEnvironment env) {
    this.env = env;
  }

  private record Rewound(ShardId shard, long entries) {}

  @Test
  void aRelayTakingItsLeaseFromARewoundDatabaseReportsTheRewindAndPublishesOnAboveTheTop() throws Exception {
    String topic = "taken";
    try (Relay before = RelayTestSupport.relay(env, topic).owner("relay-before").build()) {
      publishThenRewind(before, topic, false);
    }
    List<Rewound> events = new CopyOnWriteArrayList<>();
    try (LogCapture logs = LogCapture.start();
        Relay after = RelayTestSupport.relay(env, topic).owner("relay-after").listener(recorder(events)).build()) {
      after.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> RelayTestSupport.unpublished(env, topic) == 0);

      assertThat(events).containsExactly(new Rewound(new ShardId(topic, 0), 5));
      assertThat(logs.warnings()).filteredOn(l -> l.contains("the database went back in time")).singleElement()
          .asString().startsWith("ERROR").contains(REWIND_LINE, "found while taking its lease");
      Health health = after.health();
      assertThat(health.status()).isEqualTo(Health.Status.DEGRADED);
      assertThat(health.reasons()).singleElement().satisfies(r -> {
        assertThat(r.code()).isEqualTo("database-rewound");
        assertThat(r.message()).contains(REWIND_LINE);
      });
    }
    assertPublishedOnceAboveTheGhosts(topic);
  }

  @Test
  void aRelayPublishingAllAlongToldItsIdsAreTakenReportsARewindNotAnotherWriter() throws Exception {
    String topic = "through";
    List<Rewound> events = new CopyOnWriteArrayList<>();
    try (LogCapture logs = LogCapture.start();
        Relay relay = RelayTestSupport.relay(env, topic).owner("relay-through").listener(recorder(events)).build()) {
      publishThenRewind(relay, topic, true);
      relay.relayOnce(); // its IDs collide with the ghosts: refused, reported, re-IDed and published
      relay.relayOnce();

      assertThat(RelayTestSupport.unpublished(env, topic)).isZero();
      assertThat(events).containsExactly(new Rewound(new ShardId(topic, 0), 5));
      assertThat(logs.warnings()).filteredOn(l -> l.contains("the database went back in time")).hasSize(2)
          .anySatisfy(l -> assertThat(l).contains(REWIND_LINE, "found while publishing"))
          .anySatisfy(l -> assertThat(l).contains("refused 3 entries", "handed out again IDs the stream holds"));
      assertThat(logs.warnings()).noneMatch(l -> l.contains("something else writes this stream"));
    }
    assertPublishedOnceAboveTheGhosts(topic);
  }

  @Test
  void aRelayThatPausesOnARewindPublishesThatShardNoMoreUntilAnOperatorClearsThePause() throws Exception {
    String topic = "paused";
    List<Rewound> events = new CopyOnWriteArrayList<>();
    try (LogCapture logs = LogCapture.start();
        Relay relay = RelayTestSupport.relay(env, topic).owner("relay-pausing").pauseOnDatabaseRewind(true)
            .listener(recorder(events)).build()) {
      publishThenRewind(relay, topic, true);
      relay.relayOnce(); // finds the rewind: its refused rows go back to the outbox, and the shard stops
      relay.relayOnce();
      relay.relayOnce();

      assertThat(events).containsExactly(new Rewound(new ShardId(topic, 0), 5));
      assertThat(RelayTestSupport.unpublished(env, topic)).isEqualTo(3);
      assertThat(env.queryLong("select count(*) from relay_lease where topic = ? and paused_at is not null"
          + " and paused_reason like '%the database went back in time%'", topic)).isEqualTo(1);
      assertThat(logs.warnings()).anySatisfy(l -> assertThat(l).contains("Publishing of " + topic + ":0 stops"
          + " until an operator runs handoff resume --topic " + topic + "."));
    }
    // Another relay taking the lease stays paused: the pause is in the lease row, not in the relay that found it.
    try (Relay successor = RelayTestSupport.relay(env, topic).owner("relay-successor").pauseOnDatabaseRewind(true)
        .build()) {
      successor.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> successor.health().has("database-rewound"));
      assertThat(successor.health().reasons()).singleElement().satisfies(r -> assertThat(r.message())
          .contains("before this relay took its shards", "Publishing of [" + topic + ":0] is paused"));
      assertThat(RelayTestSupport.unpublished(env, topic)).as("paused: nothing published").isEqualTo(3);

      env.execute("UPDATE relay_lease SET paused_at = NULL, paused_reason = NULL WHERE topic = '" + topic + "'");
      // It looks each cycle while paused: it sees the pause cleared, as handoff resume clears it, and publishes.
      await().atMost(Duration.ofSeconds(20)).until(() -> RelayTestSupport.unpublished(env, topic) == 0);
      await().atMost(Duration.ofSeconds(20)).until(() -> successor.health().status() == Health.Status.UP);
    }
    assertPublishedOnceAboveTheGhosts(topic);
  }

  /**
   * Publishes 10 rows, remembers the database's record, publishes 5 more, then puts the database back as a standby
   * that had only the first 10 would be: the record and the 5 rows gone, the 5 entries still in the stream. Then 3
   * payments are made on the "new primary".
   *
   * @param collide whether the 5 get IDs a minute ahead of the clock (as a lease's last ID can be), so that the IDs
   *     the rewound database hands out next are theirs, whatever the clock does meanwhile
   */
  private void publishThenRewind(Relay relay, String topic, boolean collide) throws Exception {
    RelayTestSupport.appendKeyed(env, topic, 10);
    relay.relayOnce();
    if (collide) {
      env.execute("UPDATE relay_lease SET last_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 60000,"
          + " last_seq = -1 WHERE topic = '" + topic + "'");
    }
    long lastMs = env.queryLong("select last_ms from relay_lease where topic = ?", topic);
    long lastSeq = env.queryLong("select last_seq from relay_lease where topic = ?", topic);
    long lastRow = env.queryLong("select max(id) from outbox where topic = ?", topic);
    RelayTestSupport.append(env, topic, 5);
    relay.relayOnce();
    assertThat(env.redis().xlen(key(topic))).isEqualTo(15);

    env.execute("UPDATE relay_lease SET last_ms = " + lastMs + ", last_seq = " + lastSeq + ", entries_added = 10,"
        + " batch_ids = NULL, batch_ms = NULL, batch_seq = NULL WHERE topic = '" + topic + "'",
        "DELETE FROM outbox WHERE topic = '" + topic + "' AND id > " + lastRow);
    RelayTestSupport.append(env, topic, 3);
  }

  /** 18 entries: the 15 of before (5 of them ghosts now) and the 3 new rows, each once, as the outbox records. */
  private void assertPublishedOnceAboveTheGhosts(String topic) throws Exception {
    List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key(topic));
    assertThat(entries).hasSize(18);
    assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(18);
    assertThat(env.queryLong("select count(*) from outbox where topic = ? and published_at is not null", topic))
        .isEqualTo(13);
    Set<String> rows = new HashSet<>(env.queryList("select message_id::text from outbox where topic = ?",
        String.class, topic));
    List<RelayTestSupport.Entry> ours = entries.stream()
        .filter(e -> rows.contains(e.message().messageId().toString())).toList();
    assertThat(ours).hasSize(13);
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, ours);
  }

  private static RelayListener recorder(List<Rewound> events) {
    return new RelayListener() {
      @Override
      public void databaseRewound(ShardId shard, long entries, String detail) {
        events.add(new Rewound(shard, entries));
      }
    };
  }

  private String key(String topic) {
    return StreamFormat.streamKey(env.keyPrefix(), topic, 0);
  }
}
