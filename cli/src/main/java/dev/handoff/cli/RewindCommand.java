package dev.handoff.cli;

import dev.handoff.consumer.admin.RewindPlan;
import dev.handoff.consumer.admin.RewindRefusedException;
import dev.handoff.consumer.admin.RewindTarget;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff rewind}: sets a consumer group back on every shard of a topic, within what the streams retain
 * ({@link dev.handoff.consumer.admin.StreamAdmin#rewind}).
 *
 * <pre>java -jar handoff.jar rewind --topic payments --group billing --to 2026-12-01T10:00:00Z --dry-run</pre>
 */
@Command(name = "rewind", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Sets a consumer group back so that the entries at or after --to come again, after saying how"
        + " many per shard. Refused (exit 1, nothing changed) below the oldest entry a shard retains: replay older"
        + " history from the outbox with HandoffConsumer.replayFromOutbox.")
final class RewindCommand implements Callable<Integer> {

  @Option(names = "--topic", required = true, description = "the topic")
  String topic;

  @Option(names = "--group", required = true, description = "the consumer group")
  String group;

  @Option(names = "--to", required = true, paramLabel = "TIME|ID",
      description = "an ISO-8601 instant (2026-12-01T10:00:00Z) or a stream entry ID (1796119200000-0): entries at"
          + " or after it come again")
  String to;

  @Option(names = "--shard", description = "only this shard (default: every shard of the topic)")
  Integer shard;

  @Option(names = "--dry-run", description = "say what would come again, change nothing")
  boolean dryRun;

  @Mixin
  AdminOptions options;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    RewindTarget target;
    try {
      target = RewindTarget.parse(to);
      if (shard != null) {
        target = target.onShard(shard);
      }
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--to: " + e.getMessage(), e, null, to);
    }
    PrintWriter out = spec.commandLine().getOut();
    try (AdminOptions.Opened opened = options.open(spec, "handoff-rewind")) {
      RewindPlan plan = opened.admin().rewind(topic, group, target, dryRun);
      for (RewindPlan.Shard s : plan.shards()) {
        out.println(s);
      }
      out.println(plan);
      out.flush();
      return 0;
    } catch (RewindRefusedException e) {
      spec.commandLine().getErr().println("handoff: " + e.getMessage());
      spec.commandLine().getErr().flush();
      return HandoffCommand.CHECK_FAILED;
    }
  }
}
