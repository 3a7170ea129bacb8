package dev.handoff.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code handoff ordered}: what an operator does for a consumer group ordered per shard. {@code resume} answers a
 * shard that stopped behind a message that ran out of deliveries ({@code WhenExhausted.STOP_SHARD}): the shard's
 * owner tries the message again, or with {@code --skip} dead-letters it and goes on. {@code handoff status} shows
 * each shard's owner, epoch, position and what holds it up.
 */
@Command(name = "ordered", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Consumer groups ordered per shard: resume a shard that stopped behind a message.",
    subcommands = {OrderedCommand.ResumeShardCommand.class})
final class OrderedCommand implements Runnable {

  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "an ordered command is required: "
        + String.join(", ", spec.subcommands().keySet()));
  }

  @Command(name = "resume", mixinStandardHelpOptions = true, sortOptions = false,
      description = "Answers a shard of an ordered group that stopped behind a message that ran out of deliveries:"
          + " its owner tries the message again (should it fail again, the shard stops again), or with --skip"
          + " dead-letters it and goes on with the shard's next message. The owner carries it out within about a"
          + " second. Exit 1 when the shard was not stopped.")
  static final class ResumeShardCommand implements Callable<Integer> {

    @Mixin
    DatabaseOptions database;

    @Option(names = "--group", required = true, paramLabel = "GROUP", description = "the consumer group")
    String group;

    @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic")
    String topic;

    @Option(names = "--shard", required = true, paramLabel = "N", description = "the stopped shard")
    int shard;

    @Option(names = "--skip", description = "dead-letter the message that stopped the shard instead of retrying it")
    boolean skip;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
      boolean answered = DlqCommand.withAdmin(database, spec, admin -> admin.resumeShard(group, topic, shard, skip));
      PrintWriter out = spec.commandLine().getOut();
      out.println(answered
          ? "shard " + shard + " of topic " + topic + " for group " + group + ": " + (skip ? "skip" : "retry")
              + " requested; its owner carries it out within about a second (handoff status shows it)"
          : "shard " + shard + " of topic " + topic + " for group " + group + " is not stopped");
      out.flush();
      return answered ? 0 : HandoffCommand.CHECK_FAILED;
    }
  }
}
