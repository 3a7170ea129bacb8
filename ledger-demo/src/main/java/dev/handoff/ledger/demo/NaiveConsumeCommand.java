package dev.handoff.ledger.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Signals;
import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.cli.ConnectionOptions;
import dev.handoff.ledger.cli.TransportOption;
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
 * {@code naive-consume}: the {@link NaiveConsumer} (read, charge, XACK, no inbox) until SIGTERM, beside the sample's
 * {@code consume} and against the same servers and options, to see by hand what redelivery does without an inbox
 * ({@code verify --group naive} then finds the double charges). Streams only.
 */
@Command(name = "naive-consume", mixinStandardHelpOptions = true, description = "Runs the consumer without an inbox"
    + " (read, charge, XACK) until SIGTERM: redeliveries charge twice. Streams only.")
final class NaiveConsumeCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--transport", defaultValue = TransportOption.DEFAULT,
      description = "stream, as the relay runs (env HANDOFF_TRANSPORT; default stream); list is refused")
  String transport;

  @Option(names = "--group", defaultValue = NaiveConsumer.DEFAULT_GROUP,
      description = "consumer group, also the ledger charges are booked into (${DEFAULT-VALUE})")
  String group;

  @Option(names = "--workers", defaultValue = "2", description = "worker threads (${DEFAULT-VALUE})")
  int workers;

  @Option(names = "--name", description = "consumer name (default naive-<pid>); reuse it after a crash to replay"
      + " this consumer's pending entries at once")
  String name;

  @Option(names = "--min-idle", defaultValue = "PT30S",
      description = "idle time after which another consumer's pending entry is claimed (${DEFAULT-VALUE})")
  Duration minIdle;

  @Option(names = "--batch-size", defaultValue = "100", description = "entries per transaction (${DEFAULT-VALUE})")
  int batchSize;

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
    if (TransportOption.parse(transport) == Transport.LIST) {
      throw new LedgerException("naive-consume runs on streams only: a list element goes to one consumer, so a naive"
          + " group cannot read the ledger's messages beside it");
    }
    String schema = connection.schema();
    String keyPrefix = connection.keyPrefix();
    CountDownLatch stop = Signals.termination();
    try (HikariDataSource db = connection.migratedDatabase(workers + 3, "ledger-naive");
        UnifiedJedis redis = connection.redis(workers + 2)) {
      String consumerName = name != null ? name : "naive-" + ProcessHandle.current().pid();
      NaiveConsumer consumer = new NaiveConsumer(db, redis, schema, keyPrefix, group, consumerName, workers, batchSize,
          minIdle);
      consumer.start();
      spec.commandLine().getOut().printf("naive consumer %s of group '%s' running (%d workers); SIGTERM to stop%n",
          consumerName, group, workers);
      spec.commandLine().getOut().flush();
      stop.await();
      consumer.close(drainTimeout);
      spec.commandLine().getOut().printf("naive consumer %s stopped: deliveries %,d, charges %,d, reclaimed %,d%n",
          consumerName, consumer.deliveries(), consumer.charged(), consumer.reclaimed());
      return 0;
    }
  }
}
