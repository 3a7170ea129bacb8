package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Signals;
import dev.handoff.consumer.ListConsumer;
import dev.handoff.consumer.StreamConsumer;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.Transport;
import dev.handoff.ledger.ConsumerCounters;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.PaymentEvents;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code consume}: runs the ledger consumer until SIGTERM, then finishes the batches in flight and exits 0. SIGKILL
 * is safe: what was committed but not acknowledged is delivered again and skipped by the inbox. {@code --transport
 * list} takes from the relay's lists instead (BLMOVE into a processing list per worker, LREM after the commit); a
 * killed consumer's processing lists are returned by another consumer's reaper once its heartbeat
 * ({@code --min-idle}) expires, or at once when it restarts under the same {@code --name}. The consumer without an
 * inbox, for contrast, is ledger-demo's {@code naive-consume}.
 */
@Command(name = "consume", description = "Runs the ledger consumer until SIGTERM; safe to SIGKILL and restart.")
final class ConsumeCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--transport", defaultValue = TransportOption.DEFAULT,
      description = "stream or list, as the relay runs (env HANDOFF_TRANSPORT; default stream)")
  String transport;

  @Option(names = "--group", defaultValue = LedgerConsumer.DEFAULT_GROUP, description = "consumer group, also the"
      + " ledger charges are booked into (${DEFAULT-VALUE}); with --transport list every consumer must use the same"
      + " group")
  String group;

  @Option(names = "--workers", defaultValue = "2", description = "worker threads (${DEFAULT-VALUE})")
  int workers;

  @Option(names = "--name", description = "consumer name (default host-pid-random); reuse it after a crash to"
      + " replay this consumer's pending entries (on lists: its processing lists) at once")
  String name;

  @Option(names = "--min-idle", description = "streams: idle time after which another consumer's pending entry is"
      + " claimed (default PT30S); lists: the heartbeat TTL after which a silent consumer's processing lists are"
      + " returned to the head of the lists (default PT15S)")
  Duration minIdle;

  @Option(names = "--batch-size", defaultValue = "100", description = "entries per transaction (${DEFAULT-VALUE})")
  int batchSize;

  @Option(names = "--max-deliveries", defaultValue = "10",
      description = "deliveries before a failing message is dead-lettered (${DEFAULT-VALUE})")
  int maxDeliveries;

  @Option(names = "--drain-timeout", defaultValue = "PT30S",
      description = "how long SIGTERM waits for batches in flight (${DEFAULT-VALUE})")
  Duration drainTimeout;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    if (workers < 1 || workers > 64) {
      throw new LedgerException("--workers must be between 1 and 64, was " + workers);
    }
    Transport t = TransportOption.parse(transport);
    Duration idle = minIdle != null ? minIdle : t == Transport.LIST ? Duration.ofSeconds(15) : Duration.ofSeconds(30);
    String schema = connection.schema();
    String keyPrefix = connection.keyPrefix();
    CountDownLatch stop = Signals.termination();
    try (HikariDataSource db = connection.migratedDatabase(workers + 3, "ledger-consume")) {
      RedisConnectionSpec redis = connection.consumerRedis();
      try (UnifiedJedis check = connection.redis(1)) {
        check.ping(); // fail fast with one line if Redis is not there
      }
      LedgerConsumer consumer = LedgerConsumer.of(t == Transport.LIST
          ? ListConsumer.builder(db, redis).heartbeatTtl(idle).maxDeliveries(maxDeliveries).consumerName(name)
              .schema(schema).keyPrefix(keyPrefix).topic(PaymentEvents.TOPIC_CONFIG).group(group).workers(workers)
              .batchSize(batchSize)
          : StreamConsumer.builder(db, redis).minIdle(idle).maxDeliveries(maxDeliveries).consumerName(name)
              .schema(schema).keyPrefix(keyPrefix).topic(PaymentEvents.TOPIC_CONFIG).group(group).workers(workers)
              .batchSize(batchSize), db); // a null name: handoff's default, host and process
      consumer.start();
      String consumerName = consumer.handoff().config().consumerName();
      running("ledger consumer %s of group '%s' running on %s (%d workers); SIGTERM to stop", consumerName, group,
          t == Transport.LIST ? "lists" : "streams", workers);
      stop.await();
      boolean clean = consumer.close(drainTimeout);
      ConsumerCounters c = consumer.counters();
      spec.commandLine().getOut().printf("ledger consumer %s stopped%s: deliveries %,d, charged %,d, duplicates"
          + " skipped %,d, reclaimed %,d, dead-lettered %,d%n", consumerName,
          clean ? "" : t == Transport.LIST ? " (batches in flight abandoned, returned to the lists)"
              : " (batches in flight abandoned, left pending)", c.deliveries(), c.handled(), c.duplicates(),
          c.reclaimed(), c.deadLettered());
      return 0;
    }
  }

  /** The line that says the command runs, on standard output: its SIGTERM handler is in place once it is printed. */
  private void running(String format, Object... args) {
    spec.commandLine().getOut().printf(format + "%n", args);
    spec.commandLine().getOut().flush();
  }
}
