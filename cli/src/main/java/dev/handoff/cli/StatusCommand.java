package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.admin.TopicStatus;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff status}: the whole path of every topic (or one), from the outbox to each consumer group
 * ({@link TopicInspector}).
 */
@Command(name = "status", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Shows per topic the outbox depth, relay leases, streams or lists, and per consumer group the"
        + " backlog (never delivered), pending (delivered, not acknowledged), consumers and dead letters. Topics and"
        + " groups are found in the database and Redis unless named.")
final class StatusCommand implements Callable<Integer> {

  @Mixin
  DatabaseOptions database;

  @Mixin
  RedisOptions redis;

  @Option(names = "--topic", description = "only this topic (default: every topic found)")
  String topic;

  @Option(names = "--group", description = "only this consumer group (default: every group found)")
  String group;

  @Option(names = "--json", description = "print JSON (one object per run: {\"topics\": [...]})")
  boolean json;

  @Option(names = "--watch", description = "refresh in place every --interval until Ctrl-C")
  boolean watch;

  @Option(names = "--interval", defaultValue = "2s", description = "with --watch: time between refreshes"
      + " (default ${DEFAULT-VALUE})")
  Duration interval;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter out = spec.commandLine().getOut();
    CountDownLatch stop = watch ? Signals.termination() : new CountDownLatch(0);
    try (HikariDataSource db = database.open(spec, 2, "handoff-status");
        TopicInspector inspector = TopicInspector.builder(db, redis.spec()).schema(database.schema())
            .keyPrefix(redis.keyPrefix()).build()) {
      database.requireMigrated(db);
      do {
        List<TopicStatus> topics = new ArrayList<>();
        for (String t : topic != null ? List.of(topic) : inspector.topics()) {
          topics.add(inspector.status(t, group));
        }
        if (watch && !json) {
          out.print("\033[H\033[2J"); // home and clear: the next frame replaces this one
        }
        print(out, topics);
        out.flush();
      } while (watch && !stop.await(interval.toMillis(), TimeUnit.MILLISECONDS));
      return 0;
    }
  }

  private void print(PrintWriter out, List<TopicStatus> topics) {
    if (json) {
      out.println(Json.write(java.util.Map.of("topics", topics.stream().map(StatusReport::toMap).toList())));
      return;
    }
    out.println(StatusReport.header(Instant.now(), topics.size()));
    if (topics.isEmpty()) {
      out.println("no topics found in schema " + database.schema() + " or under key prefix " + redis.keyPrefix());
    }
    for (TopicStatus t : topics) {
      out.println();
      StatusReport.lines(t).forEach(out::println);
    }
  }
}
