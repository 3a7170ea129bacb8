package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Signals;
import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code relay}: publishes the payments topic until SIGTERM, then drains and exits 0. SIGKILL is safe: a restarted
 * (or another) relay takes the shards over when the lease expires and re-sends with the same stream IDs (on lists:
 * behind the last-pushed marker, which skips what was pushed already). {@code --transport list} pushes onto one
 * Redis list per shard, at most {@code --list-capacity} elements waiting or in processing; the outbox holds the rest.
 */
@Command(name = "relay", description = "Runs a relay until SIGTERM (exit 0 after draining); safe to SIGKILL and"
    + " restart.")
final class RelayCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--lease-ttl", defaultValue = "PT10S", description = "lease lifetime, ISO-8601 (${DEFAULT-VALUE})")
  Duration leaseTtl;

  @Option(names = "--drain-timeout", defaultValue = "PT10S",
      description = "how long SIGTERM waits for assigned rows to be published (${DEFAULT-VALUE})")
  Duration drainTimeout;

  @Option(names = "--transport", defaultValue = TransportOption.DEFAULT,
      description = "stream or list (env HANDOFF_TRANSPORT; default stream); the consumers must use the same")
  String transport;

  @Option(names = "--list-capacity", defaultValue = "10000", description = "with --transport list: elements per"
      + " shard waiting in the list or in processing at most; the outbox holds the rest (${DEFAULT-VALUE})")
  int listCapacity;

  @Override
  public Integer call() throws InterruptedException {
    Transport t = TransportOption.parse(transport);
    if (listCapacity < 1) {
      throw new LedgerException("--list-capacity must be at least 1, was " + listCapacity);
    }
    String schema = connection.schema();
    String keyPrefix = connection.keyPrefix();
    CountDownLatch stop = Signals.termination();
    try (HikariDataSource db = connection.migratedDatabase(4, "ledger-relay");
        UnifiedJedis redis = connection.redis(8)) {
      RelayBuilder builder = Relay.builder(db, redis)
          .schema(schema)
          .keyPrefix(keyPrefix)
          .topic(PaymentEvents.TOPIC_CONFIG)
          .leaseTtl(leaseTtl)
          .drainTimeout(drainTimeout);
      if (t == Transport.LIST) {
        builder.listTransport(listCapacity);
      }
      Relay relay = builder.build();
      relay.start();
      // On standard output: its SIGTERM handler is in place once this is printed.
      spec.commandLine().getOut().printf("relay running (%s) against %s and %s; SIGTERM to stop%n",
          t == Transport.LIST ? "lists, capacity " + listCapacity + " per shard" : "streams",
          connection.maskedJdbcUrl(), connection.maskedRedisUrl());
      spec.commandLine().getOut().flush();
      stop.await();
      boolean drained = relay.close(drainTimeout);
      LoggerFactory.getLogger(RelayCommand.class).info("relay stopped{}",
          drained ? "" : " (some assigned rows are left for the next owner)");
      return 0;
    }
  }
}
