package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.StreamFormat;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The verification test of consumer/README.md, step for step: pay, consume, trim, replay the last hour, no new charge. */
@HandoffTest
class ReplayVerificationExampleTest {

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  ReplayVerificationExampleTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  @Test
  void replayingTheLastHourFromTheOutboxChargesNothingTwiceAfterTheStreamsWereTrimmed() {
    PaymentService payments = new PaymentService(env.dataSource(), env.schema());
    List<Payment> ten = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      ten.add(new Payment("verify-" + i, "acct-" + i, 100 + i, false));
    }
    try (Relay relay = t.relay(); LedgerConsumer ledger = t.ledger("verify", LedgerConsumer.DEFAULT_GROUP)) {
      StreamConsumer consumer = ledger.consumer();
      Instant start = Instant.now();
      payments.payAll(ten);
      List<UUID> ids = env.queryList("SELECT message_id FROM outbox", UUID.class);
      relay.start();
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, ids, Duration.ofSeconds(30));
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(30));
      for (int shard = 0; shard < PaymentEvents.SHARDS; shard++) {
        env.redis().xtrim(StreamFormat.streamKey(env.keyPrefix(), PaymentEvents.TOPIC, shard), 0, false);
      }
      long charges = env.queryLong("SELECT count(*) FROM charge");

      ReplayResult replay = ConsumerTestKit.assertReplayChangesNothing(consumer,
          OutboxRange.appendedSince(start.minus(Duration.ofHours(1))));

      assertThat(ids).hasSize(10);
      assertThat(charges).isEqualTo(10);
      assertThat(replay.offered()).isEqualTo(10);
      assertThat(replay.duplicates()).isEqualTo(10);
      assertThat(env.queryLong("SELECT count(*) FROM charge")).isEqualTo(charges);
      assertThat(consumer.replayRetained().read()).as("the streams hold nothing to replay").isZero();
    }
  }
}
