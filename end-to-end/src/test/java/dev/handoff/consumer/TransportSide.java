package dev.handoff.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.outbox.Message;
import dev.handoff.outbox.Outbox;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.testing.TestEnvironment;
import dev.handoff.testkit.ConsumerTestKit;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.function.IntFunction;

/**
 * A stream or a list consumer seen through one interface, so that a test runs unchanged on both transports; plus
 * the outbox-side steps those tests share (append through the outbox, relay everything).
 */
interface TransportSide extends AutoCloseable {

  PollResult pollOnce();

  void start();

  ReplayResult replayFromOutbox(OutboxRange range);

  ReplayResult assertReplayChangesNothing(OutboxRange range);

  void awaitDrained(Duration deadline);

  void awaitProcessed(List<UUID> ids, Duration deadline);

  Set<UUID> processed(List<UUID> ids);

  InboxPurgeResult purgeInbox();

  long purgeInbox(Instant before);

  /** The consumer itself, for the test kit's calls. */
  HandoffConsumer consumer();

  @Override
  void close();

  /** Either transport's consumer, through the interface both implement. */
  static TransportSide of(HandoffConsumer c) {
    return new TransportSide() {
      public PollResult pollOnce() { return c.pollOnce(); }
      public void start() { c.start(); }
      public ReplayResult replayFromOutbox(OutboxRange r) { return c.replayFromOutbox(r); }
      public ReplayResult assertReplayChangesNothing(OutboxRange r) {
        return ConsumerTestKit.assertReplayChangesNothing(c, r);
      }
      public void awaitDrained(Duration d) {
        if (c instanceof StreamConsumer stream) {
          ConsumerTestKit.awaitDrained(stream, d);
        } else {
          ConsumerTestKit.awaitDrained((ListConsumer) c, d);
        }
      }
      public void awaitProcessed(List<UUID> ids, Duration d) { ConsumerTestKit.awaitProcessed(c, ids, d); }
      public Set<UUID> processed(List<UUID> ids) { return c.processed(ids); }
      public InboxPurgeResult purgeInbox() { return c.purgeInbox(); }
      public long purgeInbox(Instant before) { return c.purgeInbox(before); }
      public HandoffConsumer consumer() { return c; }
      public void close() { c.close(); }
    };
  }

  /** A list consumer of the fixture's topic with the settings these tests use. */
  static ListConsumerBuilder listConsumer(TestEnvironment env, Fixture f, String group) {
    return ListConsumer.builder(env.dataSource(), RedisConnectionSpec.of(f.redisUri)).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(f.topic).group(group).block(Duration.ofMillis(100)).heartbeatTtl(Duration.ofSeconds(5))
        .heartbeatInterval(Duration.ofMillis(500));
  }

  /** A relay of one topic on the given transport. */
  static RelayBuilder relay(TestEnvironment env, String topic, Transport transport) {
    RelayBuilder b = Relay.builder(env.dataSource(), env.redisSpec()).schema(env.schema()).keyPrefix(env.keyPrefix())
        .topic(TopicConfig.of(topic));
    return transport == Transport.LIST ? b.listTransport(100_000) : b;
  }

  /** Relays until nothing of the outbox is left unpublished. */
  static void publishAll(TestEnvironment env, Relay relay) {
    for (int i = 0; i < 1_000 && env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL") > 0; i++) {
      relay.relayOnce();
    }
    assertThat(env.queryLong("SELECT count(*) FROM outbox WHERE published_at IS NULL")).isZero();
  }

  /** Polls a consumer that was not started until a poll finds nothing. */
  static void drain(TransportSide consumer) {
    for (int i = 0; i < 1_000; i++) {
      if (consumer.pollOnce().isEmpty()) {
        return;
      }
    }
    throw new AssertionError("consumer still busy after 1,000 polls");
  }

  /** Waits until the database clock has moved {@code by} past now, so rows published before are older than it. */
  static void awaitDatabaseClockPast(TestEnvironment env, Duration by) {
    String now = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
    long start = env.queryLong(now);
    ConsumerTestKit.await("the database clock to move " + by, Duration.ofSeconds(5),
        () -> env.queryLong(now) >= start + by.toMillis());
  }

  /** Appends {@code n} rows with keys k0..k(n-1) through the outbox, in one transaction. */
  static List<dev.handoff.outbox.AppendedMessage> append(TestEnvironment env, String topic, int n,
      IntFunction<String> payload) throws Exception {
    Outbox outbox = Outbox.builder().schema(env.schema()).build();
    List<Message> messages = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      messages.add(Message.builder(topic, "test.event").key("k" + i).payload(payload.apply(i)).build());
    }
    try (Connection tx = env.dataSource().getConnection()) {
      tx.setAutoCommit(false);
      List<dev.handoff.outbox.AppendedMessage> out = outbox.appendAll(tx, messages);
      tx.commit();
      return out;
    }
  }
}
