package dev.handoff.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.relay.Relay;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import dev.handoff.testkit.KillSwitch;
import dev.handoff.testkit.SimulatedCrash;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The operator's {@code handoff status} on the ledger's lists keeps the three places apart: the outbox backlog (held
 * back at the capacity), waiting in the lists, and in processing per consumer with whether it is alive, with the
 * oldest in processing and the dead letters; it finds the transport by itself and says so in JSON too.
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
    KillSwitch process = ConsumerTestKit.killSwitch(point -> {
      if (point == ConsumerFaults.Point.AFTER_COMMIT) {
        throw new SimulatedCrash("after commit");
      }
    });
    LedgerConsumer ledger = LedgerConsumer.of(ListConsumer.builder(env.dataSource(), env.redisSpec())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .group(LedgerConsumer.DEFAULT_GROUP)
        .consumerName("stuck")
        .workers(1)
        .batchSize(2)
        .heartbeatTtl(Duration.ofMinutes(5))
        .faults(process), env.dataSource(), false, null);
    assertThatThrownBy(() -> ledger.listConsumer().pollOnce()).isInstanceOf(SimulatedCrash.class);

    // when
    LedgerTestSupport.Run text = t.handoff("status", "--topic", PaymentEvents.TOPIC, "--group", "ledger");
    LedgerTestSupport.Run json = t.handoff("status", "--topic", PaymentEvents.TOPIC, "--group", "ledger", "--json");

    // then: 20 pushed (capacity 5 x 4 shards), 2 of them in processing, 80 held back in the outbox
    assertThat(text.exit()).as(text.err()).isZero();
    assertThat(text.out()).contains("topic payments: 4 shards, [list], outbox depth 80,",
        "list group ledger: waiting 18, in processing 2, dead letters 0");
    assertThat(text.out()).containsPattern("(?m)^    \\S+\\{payments:0}:list +waiting 3, in processing \\{stuck-0=2"
        + " alive}, oldest in processing (?:\\d+ms|\\d+\\.\\ds), capacity 5$");
    assertThat(json.exit()).as(json.err()).isZero();
    assertThat(json.out()).contains("\"transports\":[\"list\"]", "\"outboxDepth\":80,",
        "\"listGroups\":[{\"group\":\"ledger\",\"waiting\":18,\"inProcessing\":2,\"deadLetters\":0,",
        "\"processing\":{\"stuck-0\":2},\"alive\":{\"stuck-0\":true},\"oldestInProcessingMillis\":",
        "\"capacity\":5}");

    // when the consumer's process is gone for good (killed: no heartbeat) and its heartbeat key expires
    process.kill();
    env.redis().keys(env.keyPrefix() + ":*:alive").forEach(k -> env.redis().del(k));

    // then status says it is not alive, with what it still holds
    assertThat(t.handoff("status", "--topic", PaymentEvents.TOPIC, "--group", "ledger").out())
        .contains("in processing {stuck-0=2 dead}");
    ledger.close(); // frees the frozen consumer's thread and connections
  }
}
