package dev.handoff.ledger.demo;

import dev.handoff.consumer.ConsumerBuilder;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.consumer.status.ConsumerStatus;
import dev.handoff.consumer.status.ListStatus;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.testing.tools.LedgerServers;

/**
 * Whether the demo's consumers have finished: never-started consumers of the ledger's group and the naive group
 * (on lists, of the ledger's group only), asked for their status.
 */
final class DemoProbes implements AutoCloseable {

  private final StreamConsumer ledger;
  private final StreamConsumer naive;
  private final ListConsumer lists;

  DemoProbes(LedgerServers servers, Demo.Config config) {
    String schema = config.schema();
    String prefix = config.keyPrefix();
    boolean onLists = config.lists();
    this.ledger = onLists ? null : probe(StreamConsumer.builder(servers.dataSource(), servers.redisSpec()), schema,
        prefix, LedgerConsumer.DEFAULT_GROUP).build();
    this.naive = onLists ? null : probe(StreamConsumer.builder(servers.dataSource(), servers.redisSpec()), schema,
        prefix, NaiveConsumer.DEFAULT_GROUP).build();
    this.lists = onLists ? probe(ListConsumer.builder(servers.dataSource(), servers.redisSpec()), schema, prefix,
        LedgerConsumer.DEFAULT_GROUP).build() : null;
  }

  /** A consumer of {@code group} that is only asked for its status: never started, it reads and handles nothing. */
  private static <B extends ConsumerBuilder<B>> B probe(B builder, String schema, String prefix, String group) {
    return builder.schema(schema).keyPrefix(prefix).topic(PaymentEvents.TOPIC_CONFIG).group(group)
        .batchHandler((tx, messages) -> {
          throw new IllegalStateException("a probe never handles messages");
        });
  }

  /** Nothing left to deliver or in flight, and the dead letters are the poison payment's one (none for naive). */
  boolean drained() {
    return drained(ledger, lists, 1) && (naive == null || drained(naive, null, 0));
  }

  private static boolean drained(StreamConsumer probe, ListConsumer listProbe, long deadLetters) {
    if (listProbe != null) {
      ListStatus s = listProbe.status();
      return s.drained() && s.deadLetters() == deadLetters;
    }
    ConsumerStatus s = probe.status();
    return s.drained() && s.deadLetters() == deadLetters && s.streams().stream().allMatch(x -> x.groupExists());
  }

  @Override
  public void close() {
    if (lists == null) {
      ledger.close();
      naive.close();
    } else {
      lists.close();
    }
  }
}
