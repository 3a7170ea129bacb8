package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * The Java example of docs/lists.md, line for line (DocExamplesTest checks it), on the test's schema and key prefix:
 * switching to the list transport is configuration, and the same handler charges each payment once.
 */
@HandoffTest
class ListsDocExampleTest {

  private final TestEnvironment env;

  ListsDocExampleTest(TestEnvironment env) {
    this.env = env;
  }

  @Test
  void aRelayOnListsAndAListConsumerChargeEachPaymentOnce() {
    DataSource dataSource = env.dataSource();
    String redisUrl = env.redisUri().toString();
    DocLedger ledger = new DocLedger(dataSource, env.schema());
    List<UUID> ids = ledger.pay(TopicConfig.of("payments"), 20);

    RedisConnectionSpec redis = RedisConnectionSpec.of(redisUrl);   // "redis://redis:6379"
    Relay relay = Relay.builder(dataSource, redis)
        .schema(env.schema()).keyPrefix(env.keyPrefix())        // the test's own
        .topic("payments")
        .listTransport(10_000)              // capacity per shard; .transport(Transport.LIST) keeps the default
        .build();
    relay.start();                          // records the topic's shard count (one here) in the database

    ListConsumer consumer = ListConsumer.builder(dataSource, redis)
        .schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic("payments")                  // reads the count the relay recorded
        .group("ledger")
        .handler((tx, message) -> ledger.charge(tx, message))   // the same MessageHandler as StreamConsumer
        .build();

    try (relay; consumer) {
      assertThat(relay.config().transport()).isEqualTo(Transport.LIST);
      assertThat(relay.config().publishing().listCapacity()).isEqualTo(10_000);
      assertThat(consumer.config().topic().shards()).isEqualTo(1);
      consumer.start();
      ConsumerTestKit.awaitProcessed(consumer, ids, Duration.ofSeconds(30));
      ConsumerTestKit.awaitDrained(consumer, Duration.ofSeconds(30));
    }

    assertThat(ledger.charges("payments")).isEqualTo(20);
    assertThat(ledger.doubleCharges("payments")).isZero();
    assertThat(env.redis().llen(ListFormat.listKey(env.keyPrefix(), "payments", 0))).as("nothing left in the list").isZero();
    assertThat(env.redis().exists(dev.handoff.core.StreamFormat.streamKey(env.keyPrefix(), "payments", 0)))
        .as("no stream").isFalse();
  }
}
