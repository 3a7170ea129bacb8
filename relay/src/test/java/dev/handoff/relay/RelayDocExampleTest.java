package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The Java example of docs/relay.md ("Running it"), line for line (DocExamplesTest checks it), on the test's schema
 * and key prefix: the relay publishes every row of the topic's four shards, tells its listener, and releases its
 * leases when it closes.
 */
@HandoffTest
class RelayDocExampleTest {

  private static final int ROWS = 40;

  private final TestEnvironment env;

  RelayDocExampleTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void theRelayPublishesEveryShardAndReleasesItsLeasesOnClose() throws SQLException {
    DataSource dataSource = env.dataSource();
    RedisConnectionSpec redis = env.redisSpec();
    Metrics metrics = new Metrics();
    append(ROWS);

    Relay relay = Relay.builder(dataSource, redis)                // server or cluster, login, TLS: its own pool
        .schema(env.schema()).keyPrefix(env.keyPrefix())     // the test's own
        .topic(TopicConfig.of("payments").withShards(4))      // shard count must match the producers'
        .listener(metrics)                                    // optional RelayListener
        .build();
    try {
      relay.start();                                            // a relay thread, and a listener thread on one LISTEN connection
      await("every row published").atMost(Duration.ofSeconds(30))
          .until(() -> env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL") == 0);
      assertThat(relay.ownedShards()).hasSize(4);
    } finally {
      relay.close();                                            // drains the pending batches, releases the leases
    }

    long entries = 0;
    for (int shard = 0; shard < 4; shard++) {
      entries += env.redis().xlen(StreamFormat.streamKey(env.keyPrefix(), "payments", shard));
    }
    assertThat(entries).isEqualTo(ROWS);
    assertThat(metrics.published.get()).isEqualTo(ROWS);
    Set<Integer> all = Set.of(0, 1, 2, 3);
    assertThat(metrics.acquired).isEqualTo(all);
    assertThat(metrics.released).as("every lease released at close").isEqualTo(all);
    assertThat(relay.ownedShards()).isEmpty();
  }

  private void append(int rows) throws SQLException {
    Outbox outbox = Outbox.builder().schema(env.schema()).topic(TopicConfig.of("payments").withShards(4)).build();
    List<Message> messages = new ArrayList<>();
    for (int i = 0; i < rows; i++) {
      messages.add(Message.builder("payments", "payment.created").key("pay-" + i).build());
    }
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      outbox.appendAll(tx, messages);
      tx.commit();
    }
    assertThat(env.queryLong("SELECT count(DISTINCT shard) FROM outbox")).as("rows on every shard").isEqualTo(4);
  }

  /** A listener that counts what the relay tells it. */
  private static final class Metrics implements RelayListener {

    final AtomicLong published = new AtomicLong();
    final Set<Integer> acquired = ConcurrentHashMap.newKeySet();
    final Set<Integer> released = ConcurrentHashMap.newKeySet();

    @Override
    public void leaseAcquired(ShardId shard, long epoch) {
      acquired.add(shard.shard());
    }

    @Override
    public void leaseLost(ShardId shard, long epoch, boolean released) {
      if (released) {
        this.released.add(shard.shard());
      }
    }

    @Override
    public void published(ShardId shard, int rows, long oldestCreatedAtMillis) {
      published.addAndGet(rows);
    }
  }
}
