package dev.handoff.ledger.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.CommandLines;
import dev.handoff.cli.Json;
import dev.handoff.core.Transport;
import dev.handoff.ledger.LedgerConsumer;
import dev.handoff.ledger.LedgerServers;
import dev.handoff.ledger.LedgerStatus;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code status}: the outbox, the relay leases, the streams and every consumer group (or the lists), from both
 * servers.
 */
@Command(name = "status", description = "Outbox depth and age, relay leases, streams, and per consumer group the"
    + " backlog (never delivered), pending (delivered, unacknowledged), consumers, delivery counts, dead letters and"
    + " duplicates skipped. On lists: waiting, in processing per consumer (alive or not), the oldest in processing,"
    + " capacity, outbox backlog and dead letters.")
final class StatusCommand implements Callable<Integer> {

  @Mixin
  ConnectionOptions connection;

  @Option(names = "--json", description = "print the status as JSON")
  boolean json;

  @Option(names = "--transport", defaultValue = "${env:HANDOFF_TRANSPORT:-auto}", description = "stream, list or"
      + " auto: whichever has keys in Redis, both when both have (env HANDOFF_TRANSPORT; default auto)")
  String transport;

  @Option(names = "--group", defaultValue = LedgerConsumer.DEFAULT_GROUP,
      description = "on lists: the consumer group whose dead letters and counters are shown (${DEFAULT-VALUE})")
  String group;

  @Option(names = "--outbox-retention", defaultValue = "${env:HANDOFF_OUTBOX_RETENTION:-7d}",
      description = "the relays' outbox retention, for the purge lag: 7d, 12h, 30m (env HANDOFF_OUTBOX_RETENTION;"
          + " default 7d)")
  String outboxRetention;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    Transport t = "auto".equalsIgnoreCase(transport.trim()) ? null : TransportOption.parse(transport);
    String schema = connection.schema();
    String keyPrefix = connection.keyPrefix();
    Logging.handoff("WARN");
    try (HikariDataSource db = connection.migratedDatabase(2, "ledger-status");
        UnifiedJedis redis = connection.redis(2)) {
      ConnectionOptions.RedisTarget target = connection.redisTarget();
      LedgerStatus.Snapshot snap = LedgerStatus.collect(new LedgerServers(db, redis, target.server(),
          target.config(), target.cluster()), schema, keyPrefix, t, group,
          CommandLines.duration(outboxRetention));
      PrintWriter out = spec.commandLine().getOut();
      if (json) {
        out.println(Json.write(LedgerStatus.toMap(snap)));
      } else {
        LedgerStatus.lines(snap).forEach(out::println);
      }
      return 0;
    }
  }
}
