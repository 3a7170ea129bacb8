package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The Java examples of consumer/README.md, line for line (DocExamplesTest checks it), on the test's schema and key
 * prefix: a consumer of all four shards of a topic charges each payment once, and a replay of the last hour from
 * the outbox handles what the group had not processed and skips the rest.
 */
@HandoffTest
class ConsumerReadmeExamplesTest {

  private final TestEnvironment env;

  ConsumerReadmeExamplesTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aConsumerOfAllFourShardsChargesEachPaymentOnce() {
    DataSource dataSource = env.dataSource();
    RedisConnectionSpec redis = env.redisSpec();
    DocLedger ledger = new DocLedger(dataSource, env.schema());
    List<UUID> ids = ledger.pay(TopicConfig.of("payments").withShards(4), 40);
    assertThat(env.queryLong("SELECT count(DISTINCT shard) FROM outbox WHERE topic = 'payments'")).isEqualTo(4);

    try (Relay relay = Relay.builder(dataSource, redis).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of("payments").withShards(4)).build()) {
      StreamConsumer consumer = StreamConsumer.builder(dataSource, redis) // RedisConnectionSpec.of("redis://localhost:6379")
          .schema(env.schema()).keyPrefix(env.keyPrefix())                  // the test's own
          .topic(TopicConfig.of("payments").withShards(4))   // all shards are consumed
          .group("ledger")
          .handler((tx, message) -> ledger.charge(tx, message)) // or .batchHandler((tx, messages) -> ...) / .jooqHandler(...)
          .workers(4).batchSize(100)
          .build();
      try {
        consumer.start();
        relay.start();
        ConsumerTestKit.awaitProcessed(consumer, ids, Duration.ofSeconds(30));
        ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(30));
        assertThat(consumer.health().status()).isEqualTo(Health.Status.UP);
        consumer.close(Duration.ofSeconds(30));
      } finally {
        consumer.close();
      }
      assertThat(consumer.health().reasons()).extracting(Health.Reason::code).containsExactly("closed");
    }

    assertThat(ledger.charges("payments")).isEqualTo(40);
    assertThat(ledger.doubleCharges("payments")).isZero();
    assertThat(ledger.chargedCents("payments")).as("100 + 101 + ... + 139").isEqualTo(4780);
    assertThat(env.queryLong("SELECT count(*) FROM inbox WHERE consumer_group = 'ledger' AND outcome = 'processed'"))
        .isEqualTo(40);
  }

  @Test
  void aReplayOfTheLastHourHandlesWhatTheGroupHadNotProcessedAndSkipsTheRest() {
    TopicConfig invoices = TopicConfig.of("invoices");
    DocLedger ledger = new DocLedger(env.dataSource(), env.schema());
    try (Relay relay = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
            .topic(invoices).build();
        StreamConsumer consumer = StreamConsumer.builder(env.dataSource(), env.redisSpec()).schema(env.schema())
            .keyPrefix(env.keyPrefix()).topic(invoices).group("billing")
            .handler((tx, message) -> ledger.charge(tx, message)).build()) {
      List<UUID> processed = ledger.pay(invoices, 5);
      TransportSide.publishAll(env, relay);
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(30));
      List<UUID> notYet = ledger.pay(invoices, 2);
      TransportSide.publishAll(env, relay);
      assertThat(consumer.processed(processed)).hasSize(5);
      assertThat(consumer.processed(notYet)).isEmpty();

      ReplayResult r = consumer.replayFromOutbox(OutboxRange.appendedSince(Instant.now().minus(Duration.ofHours(1))));

      assertThat(r.offered()).isEqualTo(7);
      assertThat(r.handled()).isEqualTo(2);
      assertThat(r.duplicates()).isEqualTo(5);
      assertThat(r.failed()).isZero();
      assertThat(r.complete()).isTrue();
      assertThat(consumer.processed(notYet)).isEqualTo(Set.copyOf(notYet));
      // the two entries still in the stream are duplicates to the group now
      ConsumerTestKit.drain(consumer, Duration.ofSeconds(30));
    }
    assertThat(ledger.charges("invoices")).isEqualTo(7);
    assertThat(ledger.doubleCharges("invoices")).isZero();
  }
}
