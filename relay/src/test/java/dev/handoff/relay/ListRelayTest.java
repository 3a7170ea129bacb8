package dev.handoff.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.ListFormat;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The relay with the list transport: in order, bounded by the capacity, and a lost list pushed again; exactly once
 * into the list after a crash is {@link RelayCrashAfterWriteOnListsTest}.
 */
@HandoffTest
class ListRelayTest {

  private final TestEnvironment env;

  ListRelayTest(TestEnvironment env) {
    this.env = env;
  }

  @BeforeEach
  void clean() {
    env.execute("TRUNCATE outbox, relay_lease, relay_member");
    String list = list("orders");
    env.redis().del(list, ListFormat.relayKey(list), ListFormat.consumersKey(list),
        ListFormat.processingKey(list, "c1"));
  }

  @Test
  void stopsAtCapacityCountingProcessingListsAndTheOutboxHoldsTheRest() throws Exception {
    appendRows("orders", 100);
    String list = list("orders");
    try (Relay relay = relay("orders", 40).build()) {
      RelayCycle first = relay.relayOnce();
      assertThat(first.published()).isEqualTo(40);
      assertThat(env.redis().llen(list)).isEqualTo(40);
      assertThat(unpublished()).isEqualTo(60);
      assertThat(relay.relayOnce().published()).isZero();
      assertThat(env.redis().llen(list)).isEqualTo(40);

      // A consumer takes 10 into its processing list: still 40 in the system, so nothing more goes in.
      String processing = ListFormat.processingKey(list, "c1");
      env.redis().hset(ListFormat.consumersKey(list), processing, "0");
      for (int i = 0; i < 10; i++) {
        env.redis().lmove(list, processing, redis.clients.jedis.args.ListDirection.LEFT,
            redis.clients.jedis.args.ListDirection.RIGHT);
      }
      assertThat(relay.relayOnce().published()).isZero();
      assertThat(env.redis().llen(list)).isEqualTo(30);

      // It finishes them (LREM): room for 10 more, in outbox order after the others.
      env.redis().del(processing);
      assertThat(relay.relayOnce().published()).isEqualTo(10);
      assertThat(env.redis().llen(list)).isEqualTo(40);
      assertThat(unpublished()).isEqualTo(50);
    }
    List<RelayTestSupport.Entry> elements = elements("orders");
    assertThat(elements).hasSize(40);
    assertInOutboxOrder(elements);
    assertThat(env.redis().hget(ListFormat.relayKey(list), "capacity")).isEqualTo("40");
  }

  @Test
  void lostBookkeepingIsDetectedAndUnfinishedRowsArePushedAgainWithTheirIds() throws Exception {
    appendRows("orders", 20);
    String list = list("orders");
    try (Relay relay = relay("orders", 1000).build()) {
      assertThat(relay.relayOnce().published()).isEqualTo(20);
      // Consumers finish the first 5; the watermark becomes the 6th element's ID.
      for (int i = 0; i < 5; i++) {
        env.redis().lpop(list);
      }
      relay.maintainOnce();
      // Redis restarted without persistence: the list and the relay's hash are gone.
      env.redis().del(list, ListFormat.relayKey(list));
      relay.relayOnce();
      relay.relayOnce();
    }
    List<RelayTestSupport.Entry> elements = elements("orders");
    assertThat(elements).hasSize(15);
    assertInOutboxOrder(elements);
    assertThat(unpublished()).isZero();
  }

  private long unpublished() {
    return RelayTestSupport.unpublished(env);
  }

  /** IDs strictly increase, match the outbox rows' and follow the outbox id order. */
  private void assertInOutboxOrder(List<RelayTestSupport.Entry> elements) throws SQLException {
    RelayTestSupport.assertIdsIncreaseAndMatchOutbox(env, elements);
    RelayTestSupport.assertInOutboxIdOrder(elements);
  }

  private List<RelayTestSupport.Entry> elements(String topic) {
    return RelayTestSupport.listEntries(env.redis(), list(topic));
  }

  private RelayBuilder relay(String topic, int capacity) {
    return RelayTestSupport.relay(env, topic).listTransport(capacity);
  }

  private void appendRows(String topic, int n) throws SQLException {
    RelayTestSupport.appendKeyed(env, topic, n);
  }

  private String list(String topic) {
    return ListFormat.listKey(env.keyPrefix(), topic, 0);
  }
}
