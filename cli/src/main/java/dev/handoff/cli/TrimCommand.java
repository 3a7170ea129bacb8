package dev.handoff.cli;

import dev.handoff.consumer.admin.RewindRefusedException;
import dev.handoff.consumer.admin.TrimReport;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff trim}: shows per shard and per group what a topic's streams still hold, and trims what every
 * group finished ({@link dev.handoff.consumer.admin.StreamAdmin#trim}).
 *
 * <pre>java -jar handoff.jar trim --topic payments --dry-run</pre>
 */
@Command(name = "trim", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Shows, per shard and per group, the backlog and pending entries, and trims each stream below"
        + " what every group finished (the relay's own trim point). Safe while relays and consumers run. A stream"
        + " without a group is not trimmed.")
final class TrimCommand implements Callable<Integer> {

  @Option(names = "--topic", required = true, description = "the topic")
  String topic;

  @Option(names = "--dry-run", description = "report what would be removed, remove nothing")
  boolean dryRun;

  @Mixin
  AdminOptions options;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    try (AdminOptions.Opened opened = options.open(spec, "handoff-trim")) {
      TrimReport report = opened.admin().trim(topic, dryRun, s -> {
        out.println(s);
        for (TrimReport.Group g : s.groups()) {
          out.println("  " + g);
        }
        out.flush();
      });
      out.println(report.summary());
      out.flush();
      return 0;
    } catch (RewindRefusedException e) {
      spec.commandLine().getErr().println("handoff: " + e.getMessage());
      spec.commandLine().getErr().flush();
      return HandoffCommand.CHECK_FAILED;
    }
  }
}
