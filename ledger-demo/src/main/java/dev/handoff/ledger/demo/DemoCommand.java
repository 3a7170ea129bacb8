package dev.handoff.ledger.demo;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.cli.Connections;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.ledger.LedgerMigrations;
import dev.handoff.ledger.cli.LedgerCli;
import dev.handoff.ledger.cli.Logging;
import dev.handoff.ledger.cli.TransportOption;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.testing.tools.EmbeddedServers;
import dev.handoff.testing.tools.LedgerServers;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;

/**
 * The demo's command line ({@code java -jar ledger-demo/target/ledger-demo.jar [options]}): runs the {@link Demo},
 * the README's main job; {@code naive-consume} runs the consumer without an inbox on its own. Exit codes: 0 the
 * demo's audit passed, 1 it failed, 2 a usage error or an error such as a bad URL or an unreachable server, one line
 * on stderr without passwords.
 */
@Command(name = "ledger-demo", mixinStandardHelpOptions = true, sortOptions = false,
    description = "The main job: N payments through the outbox, a relay and two consumers, with faults injected while"
        + " it runs, then a report and an audit. Starts embedded PostgreSQL and Redis unless URLs are given. Exit 0"
        + " only if verify passes.",
    subcommands = {NaiveConsumeCommand.class, CommandLine.HelpCommand.class})
public final class DemoCommand implements Callable<Integer> {

  @Option(names = "--payments", defaultValue = "10000", description = "how many payments (${DEFAULT-VALUE})")
  int payments;

  @Option(names = "--jdbc-url", description = "use this PostgreSQL instead of an embedded one")
  String jdbcUrl;

  @Option(names = "--redis-url", description = "use this Redis instead of an embedded one")
  String redisUrl;

  @Option(names = "--redis-cluster", split = ",", paramLabel = "HOST:PORT",
      description = "use the Redis Cluster of these seed nodes instead of an embedded Redis (--redis-url, if given,"
          + " then only logs in)")
  List<String> redisCluster;

  @Option(names = "--schema", defaultValue = HandoffMigrations.DEFAULT_SCHEMA,
      description = "schema, which must hold no payments yet (${DEFAULT-VALUE})")
  String schema;

  @Option(names = "--key-prefix", defaultValue = StreamFormat.DEFAULT_KEY_PREFIX,
      description = "Redis key prefix, whose streams must not exist yet (${DEFAULT-VALUE})")
  String keyPrefix;

  @Option(names = "--transport", defaultValue = "stream", description = "stream or list: the transport the relay and"
      + " the consumers run on (${DEFAULT-VALUE}); on lists the replay becomes a re-push of every message and there is"
      + " no naive contrast")
  String transport;

  @Option(names = "--list-capacity", defaultValue = "" + Demo.Config.DEFAULT_LIST_CAPACITY,
      description = "with --transport list: elements per shard waiting or in processing at most (${DEFAULT-VALUE})")
  int listCapacity;

  @Option(names = "--verbose", description = "show handoff's own log lines (warnings and errors are shown anyway)")
  boolean verbose;

  @Spec
  CommandSpec spec;

  public static void main(String[] args) {
    System.exit(execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
  }

  /** Runs the demo (or {@code naive-consume}) writing to {@code out} and {@code err}; returns the exit code. */
  public static int execute(PrintWriter out, PrintWriter err, String... args) {
    return LedgerCli.execute(new DemoCommand(), "ledger-demo", out, err, args);
  }

  @Override
  public Integer call() {
    Demo.Config base = Demo.Config.of(payments, schema, keyPrefix, TransportOption.parse(transport));
    Demo.Config config = new Demo.Config(base.payments(), base.schema(), base.keyPrefix(), base.minIdle(),
        base.leaseTtl(), base.maxDeliveries(), base.deadline(), base.transport(), listCapacity);
    Logging.handoff(verbose ? "INFO" : "ERROR");
    PrintWriter out = spec.commandLine().getOut();
    boolean embeddedPostgres = jdbcUrl == null || jdbcUrl.isBlank();
    List<HostAndPort> seeds = Connections.clusterSeeds(redisCluster);
    boolean embeddedRedis = (redisUrl == null || redisUrl.isBlank()) && seeds.isEmpty();
    long t0 = System.nanoTime();
    try (EmbeddedServers servers = EmbeddedServers.start(embeddedPostgres, embeddedRedis)) {
      String jdbc = embeddedPostgres ? servers.jdbcUrl() : jdbcUrl;
      String redisAt = embeddedRedis ? servers.redisUrl() : redisUrl != null && !redisUrl.isBlank() ? redisUrl
          : "redis://" + seeds.get(0);
      if (embeddedPostgres || embeddedRedis) {
        out.printf("started %s in %.1fs%n", servers.describe(), (System.nanoTime() - t0) / 1e9);
      }
      RedisConnectionSpec spec = Connections.redisSpec(redisAt, url -> RedisConnectionSpec.builder(url).cluster(seeds));
      try (HikariDataSource db = Connections.database(jdbc, 24, "ledger-demo");
          UnifiedJedis redis = Connections.client(spec, 24, Connections.DEFAULT_CONNECT_TIMEOUT)) {
        LedgerMigrations.migrate(db, schema);
        Demo.Report report = Demo.run(new LedgerServers(db, redis, spec), config, out);
        report.lines().forEach(out::println);
        out.flush();
        return report.passed() ? 0 : 1;
      }
    }
  }
}
