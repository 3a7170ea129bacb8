package dev.handoff.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.handoff.core.Health;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.TopicRegistry;
import dev.handoff.migrations.HandoffGrants;
import dev.handoff.migrations.HandoffMigrations;
import dev.handoff.relay.Relay;
import dev.handoff.relay.RelayBuilder;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The relay as a process of its own, to run next to an application:
 *
 * <pre>java -jar handoff.jar relay --jdbc-url jdbc:postgresql://db/app?user=app --redis-url redis://cache:6379 \
 *     --topics payments:4,refunds</pre>
 *
 * <p>SIGTERM (or Ctrl-C) stops taking new work, publishes what was already assigned within the drain timeout,
 * releases the leases and exits 0. SIGKILL is safe too: another relay, or this one restarted, takes over after the
 * lease TTL and nothing is lost or added twice.
 */
@Command(name = "relay", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Publishes committed outbox rows to Redis Streams (or lists), exactly once per row.")
final class RelayCommand implements Callable<Integer> {

  /**
   * The relay's database connections at most at once: its cycles, its LISTEN session (unless
   * {@code --notification-jdbc-url} gives it a pool of its own), and one each for the lease renewals, the metric
   * refreshes and the LISTEN checks, which run on threads of their own.
   */
  static final int RELAY_POOL_SIZE = 5;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Mixin
  DatabaseOptions database;

  @Mixin
  RedisOptions redis;

  @Option(names = "--topics", defaultValue = "${env:HANDOFF_TOPICS}", split = ",",
      description = "topics to publish, each name:shards, or name for the count declared in the database (one shard"
          + " if none is) (env HANDOFF_TOPICS, comma-separated)")
  List<String> topics;

  @Option(names = "--lease-ttl", defaultValue = "${env:HANDOFF_LEASE_TTL:-PT10S}",
      description = "lease lifetime, ISO-8601 (env HANDOFF_LEASE_TTL; default ${DEFAULT-VALUE})")
  Duration leaseTtl;

  @Option(names = "--drain-timeout", defaultValue = "${env:HANDOFF_DRAIN_TIMEOUT:-PT10S}",
      description = "how long SIGTERM waits for assigned rows to be published (env HANDOFF_DRAIN_TIMEOUT;"
          + " default ${DEFAULT-VALUE})")
  Duration drainTimeout;

  @Option(names = "--transport", defaultValue = "${env:HANDOFF_TRANSPORT:-stream}",
      description = "stream or list (env HANDOFF_TRANSPORT; default ${DEFAULT-VALUE})")
  String transport;

  @Option(names = "--list-capacity", defaultValue = "${env:HANDOFF_LIST_CAPACITY:-10000}",
      description = "with --transport list: elements per shard waiting or in processing at most"
          + " (env HANDOFF_LIST_CAPACITY; default ${DEFAULT-VALUE})")
  int listCapacity;

  @Option(names = "--notification-jdbc-url", defaultValue = "${env:HANDOFF_NOTIFICATION_JDBC_URL}",
      description = "a direct PostgreSQL JDBC URL for the relay's LISTEN connection, when --jdbc-url goes through a"
          + " pooler in transaction mode such as PgBouncer (env HANDOFF_NOTIFICATION_JDBC_URL; default: --jdbc-url)")
  String notificationJdbcUrl;

  @Option(names = "--idle-poll-interval", defaultValue = "${env:HANDOFF_IDLE_POLL_INTERVAL:-PT1S}",
      description = "longest wait between looks at the outbox without a notification, ISO-8601; 10 times"
          + " longer while LISTEN works (env HANDOFF_IDLE_POLL_INTERVAL; default ${DEFAULT-VALUE})")
  Duration idlePollInterval;

  @Option(names = "--health-file", defaultValue = "${env:HANDOFF_HEALTH_FILE}",
      description = "write the relay's health (UP, DEGRADED or DOWN, then a line per reason) to this file every"
          + " second, for a container's exec probe (env HANDOFF_HEALTH_FILE)")
  Path healthFile;

  @Option(names = "--backlog-age-threshold", defaultValue = "${env:HANDOFF_BACKLOG_AGE_THRESHOLD:-0s}",
      description = "health says DEGRADED (backlog-old) while the oldest unpublished row is older than this; 0s"
          + " turns it off (env HANDOFF_BACKLOG_AGE_THRESHOLD; default ${DEFAULT-VALUE})")
  Duration backlogAgeThreshold;

  @Option(names = "--trim-margin", defaultValue = "${env:HANDOFF_TRIM_MARGIN:-0s}",
      description = "keep stream entries this long after every group finished them, so that after a database"
          + " failover failover-report and rewind still find the newest ones; costs Redis memory (env"
          + " HANDOFF_TRIM_MARGIN; default ${DEFAULT-VALUE}: trim at once)")
  Duration trimMargin;

  @Option(names = "--pause-on-database-rewind", defaultValue = "${env:HANDOFF_PAUSE_ON_DATABASE_REWIND:-false}",
      description = "when the relay finds that the database went back in time (a failover to a lagging standby), stop"
          + " publishing that shard until an operator runs handoff resume; default: report it and go on publishing"
          + " (env HANDOFF_PAUSE_ON_DATABASE_REWIND)")
  boolean pauseOnDatabaseRewind;

  @Option(names = "--metrics-port", defaultValue = "${env:HANDOFF_METRICS_PORT}",
      description = "serve /metrics (Prometheus text) and /health (200 when UP, else 503, with the reasons in JSON)"
          + " over HTTP on this port (env HANDOFF_METRICS_PORT; default: no HTTP server)")
  Integer metricsPort;

  @Option(names = "--metrics-bind", defaultValue = "${env:HANDOFF_METRICS_BIND:-0.0.0.0}",
      description = "the address --metrics-port listens on; 127.0.0.1 keeps it to this host"
          + " (env HANDOFF_METRICS_BIND; default ${DEFAULT-VALUE}, every interface)")
  String metricsBind;

  @Option(names = "--migrate", defaultValue = "${env:HANDOFF_MIGRATE:-false}",
      description = "apply handoff's migrations before starting (env HANDOFF_MIGRATE=true)")
  boolean migrate;

  /** Not a static field: logging must not start before {@link #run} has chosen its configuration. */
  private static Logger log() {
    return LoggerFactory.getLogger(RelayCommand.class);
  }

  @Override
  public Integer call() throws InterruptedException {
    if (topics == null || topics.isEmpty()) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--topics or HANDOFF_TOPICS is required");
    }
    String mode = transport.trim().toLowerCase(Locale.ROOT);
    if (!mode.equals("stream") && !mode.equals("list")) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--transport must be stream or list, was '" + transport + "'");
    }
    List<TopicOption> topicOptions = parseTopics(topics);
    InetSocketAddress metricsAddress = metricsAddress();
    CountDownLatch stop = Signals.termination();
    AtomicReference<Relay> built = new AtomicReference<>();

    // The port first: a port in use fails before any connection is waited for, and it stays open until the relay
    // has stopped and its pools are closed, so a probe sees DOWN and not a refused connection while it drains.
    try (MetricsServer metrics = metricsAddress == null ? null
            : MetricsServer.start(metricsAddress, () -> healthOf(built.get()));
        HikariDataSource db = database.open(spec, RELAY_POOL_SIZE, "handoff-relay");
        HikariDataSource listenDb = notificationJdbcUrl == null || notificationJdbcUrl.isBlank() ? null
            : Connections.database(notificationJdbcUrl, 1, "handoff-relay-listen", database.connectTimeout())) {
      RedisConnectionSpec reachable = redis.awaitReachable(database.connectTimeout());
      if (metrics != null) {
        // The address asked for: the JDK reports the wildcard 0.0.0.0 as its IPv6 form, which nobody typed.
        log().info("serving /metrics and /health on http://{}:{}", metricsAddress.getHostString(),
            metrics.address().getPort());
      }
      if (migrate) {
        HandoffMigrations.migrate(db, database.schema());
      }
      database.requireMigratedAndGranted(db, HandoffGrants.Role.RELAY);
      List<TopicConfig> topicConfigs = resolve(db, database.schema(), topicOptions);
      RelayBuilder builder = Relay.builder(db, reachable)
          .schema(database.schema())
          .keyPrefix(redis.keyPrefix())
          .leaseTtl(leaseTtl)
          .drainTimeout(drainTimeout)
          .idlePollInterval(idlePollInterval)
          .backlogAgeThreshold(backlogAgeThreshold)
          .trimMargin(trimMargin)
          .pauseOnDatabaseRewind(pauseOnDatabaseRewind);
      if (listenDb != null) {
        builder.notificationDataSource(listenDb);
      }
      if (mode.equals("list")) {
        builder.listTransport(listCapacity);
      }
      if (metrics != null) {
        builder.meterRegistry(metrics.registry());
      }
      topicConfigs.forEach(builder::topic);
      // Closed before the database pools whatever fails below (a start refused, a health file that cannot be
      // written): its leases are released and its own Redis pool closed, and no relay thread outlives them.
      try (Relay relay = builder.build()) {
        built.set(relay);
        relay.start();
        log().info("relay running against {} and {}; SIGTERM to stop", database.maskedUrl(), redis.maskedUrl());
        HealthFile health = healthFile == null ? null : new HealthFile(healthFile);
        do {
          if (health != null) {
            health.write(relay.health());
          }
        } while (!stop.await(1, TimeUnit.SECONDS));
        boolean drained = relay.close(drainTimeout);
        if (health != null) {
          health.write(relay.health());
        }
        log().info("relay stopped{}", drained ? "" : " (some assigned rows are left for the next owner)");
        return 0;
      }
    }
  }

  /** Where --metrics-port listens, or null without one. */
  private InetSocketAddress metricsAddress() {
    if (metricsPort == null) {
      return null;
    }
    if (metricsPort < 1 || metricsPort > 65535) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--metrics-port must be a port from 1 to 65535, was " + metricsPort);
    }
    InetSocketAddress address = new InetSocketAddress(metricsBind.strip(), metricsPort);
    if (address.isUnresolved()) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--metrics-bind '" + metricsBind + "' is not an address or a known host name");
    }
    return address;
  }

  private static Health healthOf(Relay relay) {
    return relay != null ? relay.health()
        : Health.down("not-started", "the relay is starting: connecting to PostgreSQL and Redis, checking the"
            + " schema");
  }

  /** A topic of {@code --topics}: its name, and its shard count where the option states one (else null). */
  record TopicOption(String name, Integer shards) {}

  /**
   * The topics to relay: each with the count the option states, or else the one declared for it in the database, or
   * one shard if none is declared yet. A stated count that differs from the declared one is refused by the relay's
   * start.
   */
  static List<TopicConfig> resolve(DataSource db, String schema, List<TopicOption> options) {
    TopicRegistry registry = new TopicRegistry(schema);
    List<TopicConfig> result = new ArrayList<>();
    try (Connection c = db.getConnection()) {
      for (TopicOption o : options) {
        int shards = o.shards() != null ? o.shards()
            : registry.read(c, o.name()).map(TopicRegistry.Declared::shards).orElse(1);
        result.add(TopicConfig.of(o.name()).withShards(shards));
      }
    } catch (SQLException e) {
      throw new IllegalStateException("could not read the topics' shard counts in schema '" + schema + "': "
          + e.getMessage(), e);
    }
    return result;
  }

  static List<TopicOption> parseTopics(List<String> specs) {
    List<TopicOption> result = new ArrayList<>();
    for (String spec : specs) {
      String s = spec.trim();
      if (s.isEmpty()) {
        continue;
      }
      int colon = s.indexOf(':');
      if (colon < 0) {
        result.add(new TopicOption(TopicConfig.requireValidName(s), null));
      } else {
        int shards;
        try {
          shards = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("topic '" + s + "' must be name or name:shards");
        }
        result.add(new TopicOption(TopicConfig.of(s.substring(0, colon)).withShards(shards).name(), shards));
      }
    }
    return result;
  }
}
