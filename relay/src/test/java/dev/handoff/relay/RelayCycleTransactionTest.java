package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.core.ShardId;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A relay cycle assigns every shard's batch in one transaction and marks them all in one transaction after the last
 * Redis write. A cycle that fails between the two leaves several shards' batches written and unmarked at once; the
 * next cycle of the same relay finds each in its stream and marks it, with no entry added twice.
 */
@HandoffTest
class RelayCycleTransactionTest {

  private static final TopicConfig TOPIC = TopicConfig.of("cycles").withShards(3);

  private final TestEnvironment env;

  RelayCycleTransactionTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    for (int shard = 0; shard < TOPIC.shards(); shard++) {
      env.redis().del(key(shard), StreamFormat.relayKey(key(shard)));
    }
  }

  @Test
  void aCycleThatFailsAfterWritingSeveralShardsLeavesThemAllUnmarkedAndTheNextCycleMarksThemWithoutDuplicates()
      throws Exception {
    append(300);
    AtomicInteger writes = new AtomicInteger();
    AtomicLong foundAgain = new AtomicLong();
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TOPIC).faults(new RelayFaults() {
          @Override
          public void afterStreamWrite(ShardId shard, int rows) {
            if (writes.incrementAndGet() == 3) {
              throw new IllegalStateException("the cycle fails after the third shard's write");
            }
          }
        }).listener(new RelayListener() {
          @Override
          public void alreadyPresent(ShardId shard, int rows) {
            foundAgain.addAndGet(rows);
          }
        }).build()) {

      assertThatThrownBy(relay::relayOnce).hasMessageContaining("after the third shard's write");

      long written = 0;
      for (int shard = 0; shard < TOPIC.shards(); shard++) {
        long length = env.redis().xlen(key(shard));
        assertThat(length).as("shard %d was written", shard).isPositive();
        assertThat(env.queryLong("select cardinality(batch_ids) from relay_lease where topic = ? and shard = ?",
            TOPIC.name(), shard)).as("shard %d's batch is still pending", shard).isEqualTo(length);
        written += length;
      }
      assertThat(env.queryLong("select count(*) from outbox where published_at is not null"))
          .as("no mark committed: the marks are one transaction after the last write").isZero();

      relay.relayOnce();

      assertThat(foundAgain.get()).as("every written batch was sent again and found in its stream")
          .isEqualTo(written);
    }
    assertThat(env.queryLong("select count(*) from outbox where published_at is null")).isZero();
    assertThat(env.queryLong("select count(*) from relay_lease where batch_ids is not null")).isZero();
    long total = 0;
    for (int shard = 0; shard < TOPIC.shards(); shard++) {
      List<RelayTestSupport.Entry> entries = RelayTestSupport.entries(env.redis(), key(shard));
      assertThat(entries.stream().map(e -> e.message().messageId()).distinct()).hasSize(entries.size());
      RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, entries);
      total += entries.size();
    }
    assertThat(total).isEqualTo(300);
  }

  private void append(int n) throws Exception {
    List<Message> batch = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      batch.add(Message.builder(TOPIC.name(), "entry.posted").key("account-" + i).payload("entry-" + i).build());
    }
    RelayTestSupport.appendAll(env, Outbox.builder().schema(env.schema()).topic(TOPIC).build(), batch);
  }

  private String key(int shard) {
    return StreamFormat.streamKey(env.keyPrefix(), TOPIC.name(), shard);
  }
}
