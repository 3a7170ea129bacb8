package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.ledger.PaymentEvents;
import dev.handoff.outbox.Relay;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import redis.clients.jedis.RedisClient;

/**
 * {@code relay}: publishes the payments topic until SIGTERM, then drains and exits 0. SIGKILL is safe: a restarted
 * (or another) relay takes the shards over when the lease expires and re-sends with the same stream IDs.
 */
@Command(name = "relay", description = "Runs a relay until SIGTERM (exit 0 after draining); safe to SIGKILL and"
    + " restart.")
final class RelayCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--lease-ttl", defaultValue = "PT10S", description = "lease lifetime, ISO-8601 (${DEFAULT-VALUE})")
  Duration leaseTtl;

  @Option(names = "--drain-timeout", defaultValue = "PT10S",
      description = "how long SIGTERM waits for assigned rows to be published (${DEFAULT-VALUE})")
  Duration drainTimeout;

  @Override
  public Integer call() throws InterruptedException {
    String schema = connection.schema();
    String keyPrefix = connection.keyPrefix();
    CountDownLatch stop = Signals.termination();
    try (HikariDataSource db = connection.migratedDatabase(4, "ledger-relay");
        RedisClient redis = connection.redis(8)) {
      Relay relay = Relay.builder(db, redis)
          .schema(schema)
          .keyPrefix(keyPrefix)
          .topic(PaymentEvents.TOPIC_CONFIG)
          .leaseTtl(leaseTtl)
          .drainTimeout(drainTimeout)
          .build();
      relay.start();
      LoggerFactory.getLogger(RelayCommand.class).info("relay running against {} and {}; SIGTERM to stop",
          connection.maskedJdbcUrl(), connection.maskedRedisUrl());
      stop.await();
      boolean drained = relay.close(drainTimeout);
      LoggerFactory.getLogger(RelayCommand.class).info("relay stopped{}",
          drained ? "" : " (some assigned rows are left for the next owner)");
      return 0;
    }
  }
}
