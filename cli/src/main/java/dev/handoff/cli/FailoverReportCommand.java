package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.admin.TopicInspector.FailoverReport;
import dev.handoff.consumer.admin.TopicInspector.FailoverReport.StreamFindings;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff failover-report}: what a database failover left in a topic's streams, read against the database
 * ({@link TopicInspector#failoverReport}). Run it against the new primary after the relay reported that the database
 * went back in time (docs/guarantees.md#a-database-failover).
 */
@Command(name = "failover-report", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Reads every entry the streams of --topic retain and lists, per stream, the ghosts (entries whose"
        + " message this database has no outbox row for, and no purge accounts for: the database lost the commit"
        + " that appended it) and the messages published twice (the database lost the record that they were"
        + " published). Exit 0 when there are none, 1 when there are. It reads the whole retained stream: an"
        + " operator's command, not a probe.")
final class FailoverReportCommand implements Callable<Integer> {

  @Mixin
  DatabaseOptions database;

  @Mixin
  RedisOptions redis;

  @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic whose streams to read")
  String topic;

  @Option(names = "--list", defaultValue = "20", paramLabel = "N",
      description = "message IDs to list per stream and kind; the counts are exact (default ${DEFAULT-VALUE})")
  int list;

  @Option(names = "--json", description = "print JSON")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    FailoverReport report;
    try (HikariDataSource db = database.open(spec, 1, "handoff-failover-report");
        TopicInspector inspector = TopicInspector.builder(db, redis.spec()).schema(database.schema())
            .keyPrefix(redis.keyPrefix()).build()) {
      database.requireMigrated(db);
      report = inspector.failoverReport(topic, list);
    }
    if (json) {
      out.println(Json.write(toMap(report)));
    } else {
      lines(report).forEach(out::println);
    }
    out.flush();
    return report.clean() ? 0 : HandoffCommand.CHECK_FAILED;
  }

  static List<String> lines(FailoverReport r) {
    List<String> out = new ArrayList<>();
    long ghosts = r.streams().stream().mapToLong(StreamFindings::ghosts).sum();
    long twice = r.streams().stream().mapToLong(StreamFindings::publishedTwice).sum();
    long entries = r.streams().stream().mapToLong(StreamFindings::entries).sum();
    out.add("topic " + r.topic() + ": " + r.streams().size() + " stream(s), " + entries + " entries read: " + ghosts
        + " ghost(s), " + twice + " message(s) published twice");
    for (StreamFindings s : r.streams()) {
      out.add("  " + s.streamKey() + " (shard " + s.shard() + "): " + s.entries() + " entries, " + s.ghosts()
          + " ghost(s), " + s.publishedTwice() + " published twice");
      if (!s.ghostIds().isEmpty()) {
        out.add("    ghosts" + listed(s.ghostIds(), s.ghosts()) + ": " + join(s.ghostIds()));
      }
      if (!s.publishedTwiceIds().isEmpty()) {
        out.add("    published twice" + listed(s.publishedTwiceIds(), s.publishedTwice()) + ": "
            + join(s.publishedTwiceIds()));
      }
    }
    if (ghosts > 0) {
      out.add("ghosts were never committed by this database: a consumer that shares it and refuses ghosts"
          + " dead-lettered them; any other may have applied them (docs/guarantees.md#a-database-failover)");
    }
    return out;
  }

  private static String listed(List<UUID> ids, long total) {
    return ids.size() < total ? " (first " + ids.size() + ")" : "";
  }

  private static String join(List<UUID> ids) {
    return String.join(" ", ids.stream().map(UUID::toString).toList());
  }

  private static Map<String, Object> toMap(FailoverReport r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("topic", r.topic());
    m.put("clean", r.clean());
    m.put("streams", r.streams().stream().map(s -> {
      Map<String, Object> x = new LinkedHashMap<>();
      x.put("shard", s.shard());
      x.put("stream", s.streamKey());
      x.put("entries", s.entries());
      x.put("ghosts", s.ghosts());
      x.put("ghostIds", s.ghostIds().stream().map(UUID::toString).toList());
      x.put("publishedTwice", s.publishedTwice());
      x.put("publishedTwiceIds", s.publishedTwiceIds().stream().map(UUID::toString).toList());
      return x;
    }).toList());
    return m;
  }
}
