package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.core.Transport;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;

/**
 * {@code status} on the list transport keeps the three places apart: the outbox backlog (held back at the capacity),
 * waiting in the lists, and in processing per consumer, with the oldest in processing and the dead letters; it finds
 * the transport by itself and says so in JSON too.
 */
@HandoffTest
class ListStatusCommandTest {

  private static final int CAPACITY = 5;

  private final TestEnvironment env;
  private final LedgerTestSupport t;

  ListStatusCommandTest(TestEnvironment env) {
    this.env = env;
    this.t = new LedgerTestSupport(env);
  }

  @Test
  void statusShowsOutboxBacklogWaitingAndInProcessingPerConsumerOnLists() {
    // given: 100 payments (about 25 per shard), a list relay of capacity 5 per shard, and a consumer that dies after its
    // first batch (2 elements of one shard) committed, before its LREM
    assertThat(t.cli("pay", "--count", "100").exit()).isZero();
    Relay relay = Relay.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .listTransport(CAPACITY)
        .build();
    for (int i = 0; i < 3; i++) {
      relay.relayOnce();
    }
    relay.close();
    LedgerConsumer ledger = LedgerConsumer.builder(env.dataSource(), HostAndPort.from(env.redisUri().getAuthority()))
        .transport(Transport.LIST)
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .consumerName("stuck")
        .workers(1)
        .batchSize(2)
        .minIdle(Duration.ofMinutes(5))
        .persistStats(false)
        .faults(point -> {
          if (point == ConsumerFaults.Point.AFTER_COMMIT) {
            throw new SimulatedCrash("after commit");
          }
        })
        .build();
    assertThatThrownBy(() -> ledger.listConsumer().pollOnce()).isInstanceOf(SimulatedCrash.class);

    // when
    LedgerTestSupport.Run text = t.cli("status");
    LedgerTestSupport.Run json = t.cli("status", "--json");
    LedgerTestSupport.Run forced = t.cli("status", "--transport", "list");
    LedgerTestSupport.Run streams = t.cli("status", "--transport", "stream");
    LedgerTestSupport.Run bad = t.cli("status", "--transport", "carrier-pigeon");

    // then: 20 pushed (capacity 5 x 4 shards), 2 of them in processing, 80 held back in the outbox
    assertThat(text.exit()).as(text.err()).isZero();
    assertThat(text.out()).contains("lists, group ledger: waiting 18 (pushed, not taken), in processing 2 (taken, not"
            + " finished), outbox backlog 80 (committed, not pushed), dead letters 0",
        "the capacity bounds waiting + in processing per shard", "stuck-0=2 alive")
        .doesNotContain("stream len");
    assertThat(text.out()).containsPattern("(?m)^  0 +5 +3 +2 +\\d+ +\\d+-\\d+ \\(\\d+\\.\\ds\\) ");
    assertThat(forced.exit()).isZero();
    assertThat(forced.out()).contains("lists, group ledger: waiting 18 (pushed, not taken), in processing 2");
    assertThat(json.exit()).as(json.err()).isZero();
    assertThat(json.out()).contains("\"transports\":[\"list\"]", "\"lists\":{\"group\":\"ledger\",\"waiting\":18,"
        + "\"in_processing\":2,\"outbox_backlog\":80,\"dead_letters\":0,",
        "\"capacity\":5,\"waiting\":3,\"in_processing\":2,\"outbox_backlog\":");
    assertThat(json.out()).contains("\"consumers\":[{\"consumer\":\"stuck-0\",\"in_processing\":2,\"alive\":true}],"
        + "\"oldest_in_processing\":\"");
    assertThat(streams.exit()).isZero();
    assertThat(streams.out()).contains("stream len", "no consumer groups yet").doesNotContain("lists, group");
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.err()).contains("--transport (or HANDOFF_TRANSPORT) must be stream or list");

    // when the consumer's process is gone for good (halted: no heartbeat) and its heartbeat key expires
    ConsumerTestKit.kill(ledger.listConsumer());
    env.redis().keys(env.keyPrefix() + ":*:alive").forEach(k -> env.redis().del(k));

    // then status says it is not alive, with what it still holds
    assertThat(t.cli("status").out()).contains("stuck-0=2 dead");
  }
}
