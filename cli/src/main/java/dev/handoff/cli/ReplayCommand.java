package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.TopicInspector;
import dev.handoff.consumer.admin.TopicStatus;
import dev.handoff.consumer.status.ListStatus;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff replay}: requests a replay of a range of the outbox through a consumer group, the way
 * {@code dlq retry} requests a retry. It runs no handler and writes nothing to Redis: the group's running consumers
 * of the topic pick the request up and run the range through their handler, skipping what their inbox already has.
 * What it is for: messages a group acknowledged whose effects the database lost (a failover to a standby that lacked
 * the last commits, docs/guarantees.md), or a group that must see a range again after a fix.
 */
@Command(name = "replay", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Requests a replay of what was appended to --topic since --since (until --until) through consumer"
        + " group --group, or through each group of the topic with --all-groups. It runs no handler: the group's"
        + " running consumers pick the request up within their retry-request interval (5 s by default), run the"
        + " range through their handler, skip what their inbox already has, and write nothing to Redis."
        + " `handoff replay --id N` shows a request and its outcome.")
final class ReplayCommand implements Callable<Integer> {

  @Mixin
  DatabaseOptions database;

  @Mixin
  RedisOptions redis;

  @Option(names = "--group", paramLabel = "GROUP", description = "the consumer group")
  String group;

  @Option(names = "--all-groups", description = "every consumer group of --topic (found in Redis and in the dead"
      + " letters, as status finds them): one request per group, the runbook after a database failover")
  boolean allGroups;

  @Option(names = "--topic", paramLabel = "TOPIC", description = "the topic the group consumes")
  String topic;

  @Option(names = "--since", paramLabel = "TIME", converter = DlqCommand.SinceConverter.class,
      description = "rows appended at or after TIME: an instant (2026-01-31T08:00:00Z) or a duration meaning that long"
          + " ago (2h, 30m)")
  Instant since;

  @Option(names = "--until", paramLabel = "TIME", converter = DlqCommand.SinceConverter.class,
      description = "rows appended before TIME (default: until the request runs)")
  Instant until;

  @Option(names = "--id", paramLabel = "ID", description = "show request ID and its outcome instead of requesting")
  Long id;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    if (id != null) {
      if (group != null || allGroups || topic != null || since != null || until != null) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--id shows a request: give it alone");
      }
      DeadLetterAdmin.ReplayRequest r = DlqCommand.withAdmin(database, spec, admin -> admin.replayRequest(id))
          .orElseThrow(() -> new IllegalStateException("no replay request " + id));
      out.println(describe(r));
      out.flush();
      return r.finishedAt() == null ? HandoffCommand.CHECK_FAILED : 0;
    }
    if ((group == null) == !allGroups || topic == null || since == null) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--group (or --all-groups), --topic and --since"
          + " are required (or --id to show a request)");
    }
    List<String> groups = allGroups ? groupsOf(topic) : List.of(group);
    if (groups.isEmpty()) {
      throw new IllegalStateException("topic " + topic + " has no consumer group in Redis or in the dead letters");
    }
    for (String g : groups) {
      long requested = DlqCommand.withAdmin(database, spec, admin -> {
        try {
          return admin.requestReplay(g, topic, since, until);
        } catch (IllegalArgumentException e) {
          throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
      });
      out.println("requested replay " + requested + " of topic " + topic + " for group " + g + ", rows appended"
          + " since " + since + (until != null ? " until " + until : "") + ": the group's running consumers run it"
          + " within their retry-request interval; handoff replay --id " + requested + " shows its outcome");
    }
    out.flush();
    return 0;
  }

  /** The topic's groups, as {@code handoff status} finds them: stream groups in Redis, list groups by dead letter. */
  private List<String> groupsOf(String topic) {
    try (HikariDataSource db = database.open(spec, 2, "handoff-replay");
        TopicInspector inspector = TopicInspector.builder(db, redis.spec()).schema(database.schema())
            .keyPrefix(redis.keyPrefix()).build()) {
      TopicStatus status = inspector.status(topic);
      TreeSet<String> names = new TreeSet<>();
      status.streamGroups().forEach(g -> names.add(g.group()));
      status.listGroups().stream().map(ListStatus::group).filter(g -> !g.equals("*")).forEach(names::add);
      return List.copyOf(names);
    }
  }

  /** One line: the request and, once run, its outcome. */
  static String describe(DeadLetterAdmin.ReplayRequest r) {
    String range = "topic " + r.topic() + " for group " + r.group() + ", rows appended since " + r.from()
        + (r.to() != null ? " until " + r.to() : "");
    return r.finishedAt() == null ? "replay " + r.id() + " of " + range + ": not run yet"
        : "replay " + r.id() + " of " + range + ": ran at " + r.finishedAt() + ", " + r.handled() + " handled, "
            + r.duplicates() + " already processed, " + r.failed() + " failed";
  }
}
