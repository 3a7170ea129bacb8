package dev.handoff.ledger.demo;

import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.RelayFaults;
import dev.handoff.testing.tools.LedgerServers;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Who takes part in the demo: the relays, the ledger consumers (each one it builds is kept, for the counts and the
 * close) and the naive consumer, all with the demo's short timings.
 */
final class DemoCast {

  /** The ledger consumers' counters, summed. */
  record Totals(long handled, long duplicates, long failed, long deadLettered, long reclaimed) {}

  private final LedgerServers servers;
  private final Demo.Config config;
  // Added to by the demo's script while its progress thread sums the counters.
  private final List<LedgerConsumer> ledgers = new CopyOnWriteArrayList<>();

  DemoCast(LedgerServers servers, Demo.Config config) {
    this.servers = servers;
    this.config = config;
  }

  Relay relay(String owner) {
    return relay(owner, RelayFaults.NONE);
  }

  Relay relay(String owner, RelayFaults faults) {
    RelayBuilder builder = Relay.builder(servers.dataSource(), servers.redisSpec())
        .faults(faults)
        .schema(config.schema())
        .keyPrefix(config.keyPrefix())
        .topic(PaymentEvents.TOPIC_CONFIG)
        .owner(owner)
        .leaseTtl(config.leaseTtl())
        .idlePollInterval(Duration.ofMillis(200))
        .trimStreams(false) // the replay through the groups sees every message: the naive consumer double-charges all
        .drainTimeout(Duration.ofSeconds(5));
    if (config.lists()) {
      builder.listTransport(config.listCapacity());
    }
    return builder.build();
  }

  LedgerConsumer ledger(String name) {
    return ledger(name, ConsumerFaults.NONE);
  }

  LedgerConsumer ledger(String name, ConsumerFaults faults) {
    LedgerConsumer c = new LedgerConsumerBuilder(servers.dataSource(), servers.redisSpec())
        .faults(faults)
        .schema(config.schema())
        .keyPrefix(config.keyPrefix())
        .transport(config.transport())
        .consumerName(name)
        .workers(2)
        .batchSize(100)
        .block(Duration.ofMillis(200))
        .minIdle(config.minIdle())
        .reclaimInterval(Duration.ofMillis(200))
        .maxDeliveries(config.maxDeliveries())
        .backoff(Duration.ofMillis(100), Duration.ofMillis(500))
        .build();
    ledgers.add(c);
    return c;
  }

  /** The consumer without an inbox, on the same streams in a group of its own; none on lists. */
  NaiveConsumer naive() {
    return config.lists() ? null : new NaiveConsumer(servers.dataSource(), servers.redis(), config.schema(),
        config.keyPrefix(), NaiveConsumer.DEFAULT_GROUP, "naive", 2, 100, config.minIdle());
  }

  /** Charges the ledger consumers reported. */
  long charged() {
    return totals().handled();
  }

  Totals totals() {
    long handled = 0;
    long duplicates = 0;
    long failed = 0;
    long deadLettered = 0;
    long reclaimed = 0;
    for (LedgerConsumer c : ledgers) {
      handled += c.counters().handled();
      duplicates += c.counters().duplicates();
      failed += c.counters().failed();
      deadLettered += c.counters().deadLettered();
      reclaimed += c.counters().reclaimed();
    }
    return new Totals(handled, duplicates, failed, deadLettered, reclaimed);
  }

  void closeLedgers() {
    for (LedgerConsumer c : ledgers) {
      c.close(Duration.ofSeconds(10));
    }
  }
}
