package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.relay.RelayBuilder;
import dev.handoff.relay.RepairReport;
import dev.handoff.relay.StreamRepair;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff repair}: puts back the entries a consumer group still needs that are gone from a topic's streams
 * ({@link StreamRepair}): their outbox rows become unpublished again and the relay owning each shard publishes them
 * at the end of the stream; gone pending entries are acknowledged. Exit 1 when some entry cannot be recovered.
 *
 * <pre>java -jar handoff.jar repair --topic orders --dry-run
 * java -jar handoff.jar repair --topic orders</pre>
 */
@Command(name = "repair", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Finds the entries of a topic's streams that a consumer group still needs (pending, or after its"
        + " last-delivered ID) and that are gone (XDEL, trimmed by hand), and makes their outbox rows unpublished"
        + " so that the relay publishes them again, at the end of the stream with new IDs; acknowledges the gone"
        + " pending entries. Never writes a stream itself. Run it with the relay's database role and Redis user."
        + " Exit 1 when an entry's outbox row was purged already (unrecoverable).")
final class RepairCommand implements Callable<Integer> {

  /** Outbox ids printed per shard, at most; the count says how many there are. */
  private static final int IDS_SHOWN = 20;

  @Option(names = "--topic", required = true, description = "the topic to repair (every shard of it)")
  String topic;

  @Option(names = "--dry-run", description = "change nothing; print what a repair would do")
  boolean dryRun;

  @Option(names = "--outbox-retention", defaultValue = "${env:HANDOFF_OUTBOX_RETENTION:-7d}",
      description = "the relays' outbox retention: a stream without consumer groups is checked above it only"
          + " (env HANDOFF_OUTBOX_RETENTION; default ${DEFAULT-VALUE})")
  Duration outboxRetention;

  @Mixin
  DatabaseOptions database;

  @Mixin
  RedisOptions redis;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    try (HikariDataSource db = database.open(spec, 2, "handoff-repair")) {
      RedisConnectionSpec reachable = redis.awaitReachable(database.connectTimeout());
      database.requireMigrated(db);
      StreamRepair repair = StreamRepair.builder(db, reachable).schema(database.schema()).keyPrefix(redis.keyPrefix())
          .outboxRetention(outboxRetention == null ? RelayBuilder.DEFAULT_OUTBOX_RETENTION : outboxRetention)
          .progress(line -> {
            err.println("repair: " + line);
            err.flush();
          })
          .build();
      RepairReport report = repair.repair(topic, dryRun);
      for (RepairReport.ShardRepair s : report.shards()) {
        out.println(shardLine(s, dryRun));
      }
      out.println((dryRun ? "dry run of topic " + topic + ": would reset " : "repair of topic " + topic + ": reset ")
          + report.rowsReset() + " rows for the relay to publish again, " + (dryRun ? "would acknowledge " :
          "acknowledged ") + report.acknowledged() + " gone pending entries, " + report.unrecoverable()
          + " unrecoverable" + (dryRun ? "; nothing changed" : ""));
      out.flush();
      return report.unrecoverable() > 0 ? HandoffCommand.CHECK_FAILED : 0;
    }
  }

  private static String shardLine(RepairReport.ShardRepair s, boolean dryRun) {
    String head = "shard " + s.shard() + " (" + s.streamKey() + "): ";
    if (!s.skipped().isEmpty()) {
      return head + "skipped: " + s.skipped();
    }
    StringBuilder line = new StringBuilder(head).append(s.rowsChecked()).append(" published rows checked above ")
        .append(s.threshold()).append("; ").append(dryRun ? "would reset " : "reset ").append(s.rowsReset().size())
        .append(" rows").append(ids(s.rowsReset()));
    line.append(", ").append(dryRun ? "would acknowledge " : "acknowledged ").append(s.acknowledgedCount())
        .append(" gone pending entries");
    if (!s.acknowledged().isEmpty()) {
      line.append(" (").append(s.acknowledged().entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
          .collect(Collectors.joining(", "))).append(')');
    }
    line.append(", ").append(s.unrecoverable().size()).append(" unrecoverable");
    if (!s.unrecoverable().isEmpty()) {
      line.append(" (pending, their outbox rows purged: ").append(shown(s.unrecoverable())).append(')');
    }
    return line.toString();
  }

  private static String ids(List<Long> ids) {
    return ids.isEmpty() ? "" : " (outbox ids " + shown(ids) + ")";
  }

  private static String shown(List<?> items) {
    String listed = items.stream().limit(IDS_SHOWN).map(String::valueOf).collect(Collectors.joining(" "));
    return items.size() > IDS_SHOWN ? listed + " and " + (items.size() - IDS_SHOWN) + " more" : listed;
  }
}
