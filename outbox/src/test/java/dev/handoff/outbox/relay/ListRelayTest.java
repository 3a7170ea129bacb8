package dev.handoff.outbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.handoff.outbox.ListFormat;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.outbox.Relay;
import dev.handoff.outbox.RelayBuilder;
import dev.handoff.outbox.RelayCycle;
import dev.handoff.outbox.ShardId;
import dev.handoff.outbox.TopicConfig;
import dev.handoff.outbox.testkit.RelayFaults;
import dev.handoff.outbox.testkit.SimulatedCrash;
import dev.handoff.testing.HandoffTest;
import dev.handoff.testing.TestEnvironment;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The relay with the list transport: exactly once into the list, in order, bounded by the capacity. */
@HandoffTest
class ListRelayTest {

  static {
    org.awaitility.Awaitility.doNotCatchUncaughtExceptionsByDefault();
  }

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
  void relayKilledAfterThePushBeforeMarkingPushesNoElementTwice() throws Exception {
    appendRows("orders", 300);
    AtomicBoolean crashed = new AtomicBoolean();
    Relay crashing = relay("orders", 10_000).leaseTtl(Duration.ofMillis(600)).faults(new RelayFaults() {
      @Override
      public void afterStreamWrite(ShardId shard, int rows) {
        crashed.set(true);
        throw new SimulatedCrash("after the RPUSH, before the mark");
      }
    }).build();
    crashing.start();
    await().atMost(Duration.ofSeconds(20)).untilTrue(crashed);
    long pushed = env.redis().llen(list("orders"));
    assertThat(pushed).isPositive();
    assertThat(env.queryLong("select count(*) from outbox where published_at is not null")).isZero();
    assertThat(env.queryLong("select cardinality(batch_ids) from relay_lease where topic = 'orders'"))
        .as("the batch that reached the list is still recorded as pending").isEqualTo(pushed);

    // The successor takes the lease after the TTL and sends the pending batch again: the marker skips it.
    try (Relay successor = relay("orders", 10_000).leaseTtl(Duration.ofMillis(600)).build()) {
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        successor.relayOnce();
        return env.queryLong("select count(*) from outbox where published_at is null") == 0;
      });
    }
    List<ListFormat.Element> elements = elements("orders");
    assertThat(elements).hasSize(300);
    assertThat(elements.stream().map(ListFormat.Element::messageId).distinct()).hasSize(300);
    assertInOutboxOrder(elements);
    crashing.close(Duration.ofMillis(100));
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
    List<ListFormat.Element> elements = elements("orders");
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
    List<ListFormat.Element> elements = elements("orders");
    assertThat(elements).hasSize(15);
    assertInOutboxOrder(elements);
    assertThat(unpublished()).isZero();
  }

  private long unpublished() {
    return env.queryLong("select count(*) from outbox where published_at is null");
  }

  /** IDs strictly increase and follow the outbox id order. */
  private void assertInOutboxOrder(List<ListFormat.Element> elements) {
    long previousOutboxId = 0;
    String previousId = null;
    for (ListFormat.Element e : elements) {
      long outboxId = e.message().outboxId();
      assertThat(outboxId).isGreaterThan(previousOutboxId);
      if (previousId != null) {
        assertThat(compare(e.id(), previousId)).isPositive();
      }
      assertThat(env.queryLong("select stream_ms * 1000000 + stream_seq from outbox where id = ?", outboxId))
          .isEqualTo(Long.parseLong(e.id().split("-")[0]) * 1_000_000 + Long.parseLong(e.id().split("-")[1]));
      previousOutboxId = outboxId;
      previousId = e.id();
    }
  }

  private static int compare(String a, String b) {
    String[] x = a.split("-");
    String[] y = b.split("-");
    int c = Long.compare(Long.parseLong(x[0]), Long.parseLong(y[0]));
    return c != 0 ? c : Long.compare(Long.parseLong(x[1]), Long.parseLong(y[1]));
  }

  private List<ListFormat.Element> elements(String topic) {
    List<ListFormat.Element> out = new ArrayList<>();
    for (byte[] raw : env.redis().lrange(list(topic).getBytes(StandardCharsets.UTF_8), 0, -1)) {
      out.add(ListFormat.decode(raw));
    }
    return out;
  }

  private RelayBuilder relay(String topic, int capacity) {
    return Relay.builder(env.dataSource(), env.redis())
        .schema(env.schema())
        .keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic))
        .listTransport(capacity)
        .idlePollInterval(Duration.ofMillis(100));
  }

  private void appendRows(String topic, int n) throws SQLException {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<Message> batch = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        batch.add(Message.builder(topic, "order.placed").key("k" + i).payload("payload-" + i).build());
      }
      outbox.appendAll(tx, batch);
      tx.commit();
    }
  }

  private String list(String topic) {
    return ListFormat.listKey(env.keyPrefix(), topic, 0);
  }
}
