package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.internal.ConsumerNames;
import dev.handoff.ledger.ConsumerCounters;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerException;
import dev.handoff.ledger.NaiveConsumer;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.RedisClient;

/**
 * {@code consume}: runs the ledger consumer (or, with {@code --naive}, the consumer without an inbox) until SIGTERM,
 * then finishes the batches in flight and exits 0. SIGKILL is safe: what was committed but not acknowledged is
 * delivered again and skipped by the inbox.
 */
@Command(name = "consume", description = "Runs the ledger consumer until SIGTERM; safe to SIGKILL and restart.")
final class ConsumeCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--group", description = "consumer group, also the ledger charges are booked into"
      + " (default ledger, or naive with --naive)")
  String group;

  @Option(names = "--workers", defaultValue = "2", description = "worker threads (${DEFAULT-VALUE})")
  int workers;

  @Option(names = "--naive", description = "charge without an inbox (read, charge, XACK): redeliveries charge twice")
  boolean naive;

  @Option(names = "--name", description = "consumer name (default host-pid-random); reuse it after a crash to"
      + " replay this consumer's pending entries at once")
  String name;

  @Option(names = "--min-idle", defaultValue = "PT30S",
      description = "idle time after which another consumer's pending entry is claimed (${DEFAULT-VALUE})")
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
    String schema = connection.schema();
    String keyPrefix = connection.keyPrefix();
    String g = group != null ? group : naive ? NaiveConsumer.DEFAULT_GROUP : LedgerConsumer.DEFAULT_GROUP;
    String consumerName = name != null ? name : ConsumerNames.generate();
    CountDownLatch stop = Signals.termination();
    var log = LoggerFactory.getLogger(ConsumeCommand.class);
    try (HikariDataSource db = connection.migratedDatabase(workers + 3, "ledger-consume")) {
      if (naive) {
        try (RedisClient redis = connection.redis(workers + 2)) {
          NaiveConsumer consumer = new NaiveConsumer(db, redis, schema, keyPrefix, g, consumerName, workers,
              batchSize, minIdle);
          consumer.start();
          log.info("naive consumer {} of group '{}' running ({} workers); SIGTERM to stop", consumerName, g, workers);
          stop.await();
          consumer.close(drainTimeout);
          spec.commandLine().getOut().printf("naive consumer %s stopped: deliveries %,d, charges %,d, reclaimed %,d%n",
              consumerName, consumer.deliveries(), consumer.charged(), consumer.reclaimed());
          return 0;
        }
      }
      ConnectionOptions.RedisTarget redis = connection.redisTarget();
      try (RedisClient check = connection.redis(1)) {
        check.ping(); // fail fast with one line if Redis is not there
      }
      LedgerConsumer consumer = LedgerConsumer.builder(db, redis.server())
          .redisConfig(redis.config())
          .schema(schema)
          .keyPrefix(keyPrefix)
          .group(g)
          .consumerName(consumerName)
          .workers(workers)
          .batchSize(batchSize)
          .minIdle(minIdle)
          .maxDeliveries(maxDeliveries)
          .build();
      consumer.start();
      log.info("ledger consumer {} of group '{}' running ({} workers); SIGTERM to stop", consumerName, g, workers);
      stop.await();
      boolean clean = consumer.close(drainTimeout);
      ConsumerCounters c = consumer.counters();
      spec.commandLine().getOut().printf("ledger consumer %s stopped%s: deliveries %,d, charged %,d, duplicates"
          + " skipped %,d, reclaimed %,d, dead-lettered %,d%n", consumerName,
          clean ? "" : " (batches in flight abandoned, left pending)", c.deliveries(), c.handled(), c.duplicates(),
          c.reclaimed(), c.deadLettered());
      return 0;
    }
  }
}
