package dev.handoff.relay;

import dev.handoff.core.CapacityPolicy;
import dev.handoff.core.RedisConnectionSpec;
import dev.handoff.core.StreamFormat;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.Transport;
import dev.handoff.core.internal.RedisClients;
import dev.handoff.core.internal.SchemaNames;
import dev.handoff.core.internal.StreamTrimScript;
import dev.handoff.relay.internal.RelayCollaborators;
import dev.handoff.relay.internal.RelayFactory;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;
import redis.clients.jedis.UnifiedJedis;

/** Builds a {@link Relay}. Not thread-safe; the built relay is. */
public final class RelayBuilder {

  /** The relay's own Redis pool: its loop, its metrics refresher and a lease takeover's checks, with room to spare. */
  private static final int REDIS_CONNECTIONS = 8;
  private static final Duration REDIS_POOL_WAIT = Duration.ofSeconds(5);

  /** Lease lifetime by default: a dead relay's shards are taken over after at most this long. */
  public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);
  public static final int DEFAULT_MIN_BATCH_SIZE = 50;
  public static final int DEFAULT_MAX_BATCH_SIZE = 1000;
  public static final int DEFAULT_MAX_BATCH_BYTES = 8 << 20;
  /** The longest wait between looks at the outbox when no notification arrives. */
  public static final Duration DEFAULT_IDLE_POLL_INTERVAL = Duration.ofSeconds(1);
  public static final Duration DEFAULT_OUTBOX_RETENTION = Duration.ofDays(7);
  public static final int DEFAULT_RETENTION_BATCH_SIZE = 1000;
  public static final Duration DEFAULT_MAINTENANCE_INTERVAL = Duration.ofSeconds(30);
  /** The most entries one trim call removes, by default (the operator's trim uses the same). */
  public static final int DEFAULT_TRIM_LIMIT = StreamTrimScript.DEFAULT_LIMIT;
  /** Entries a stream may gain after its last trim before it is trimmed again, by default. */
  public static final int DEFAULT_TRIM_SLACK = 1_000;
  public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(10);
  /** With the list transport: elements a shard's list and processing lists hold at most, by default. */
  public static final int DEFAULT_LIST_CAPACITY = 10_000;
  /** How often the gauges that need a query (outbox depth, oldest unpublished age, stream length) are refreshed. */
  public static final Duration DEFAULT_METRICS_REFRESH_INTERVAL = Duration.ofSeconds(10);

  private final DataSource dataSource;
  private final RedisConnectionSpec redis;
  private DataSource notificationDataSource;
  private RelayFaults faults = RelayFaults.NONE;
  private String schema = SchemaNames.DEFAULT_SCHEMA;
  private String keyPrefix = StreamFormat.DEFAULT_KEY_PREFIX;
  private final List<TopicConfig> topics = new ArrayList<>();
  private String owner;
  private Duration leaseTtl = DEFAULT_LEASE_TTL;
  private int minBatchSize = DEFAULT_MIN_BATCH_SIZE;
  private int maxBatchSize = DEFAULT_MAX_BATCH_SIZE;
  private int maxBatchBytes = DEFAULT_MAX_BATCH_BYTES;
  private Duration idlePollInterval = DEFAULT_IDLE_POLL_INTERVAL;
  private Duration outboxRetention = DEFAULT_OUTBOX_RETENTION;
  private int retentionBatchSize = DEFAULT_RETENTION_BATCH_SIZE;
  private Duration maintenanceInterval = DEFAULT_MAINTENANCE_INTERVAL;
  private int trimLimit = DEFAULT_TRIM_LIMIT;
  private boolean trimStreams = true;
  private int trimSlack = DEFAULT_TRIM_SLACK;
  private Duration trimMargin = Duration.ZERO;
  private boolean pauseOnDatabaseRewind;
  private Duration retentionBudget;
  private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
  private RelayListener listener = RelayListener.NOOP;
  private Clock clock = Clock.systemUTC();
  private Transport transport = Transport.STREAM;
  private int listCapacity = DEFAULT_LIST_CAPACITY;
  private Duration backlogAgeThreshold = Duration.ZERO;
  private MeterRegistry meterRegistry;
  private Duration metricsRefreshInterval = DEFAULT_METRICS_REFRESH_INTERVAL;

  RelayBuilder(DataSource dataSource, RedisConnectionSpec redis) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.redis = Objects.requireNonNull(redis, "redis");
  }

  /** The schema holding handoff's tables. Defaults to {@code handoff}. */
  public RelayBuilder schema(String schema) {
    this.schema = schema;
    return this;
  }

  /** The prefix of every Redis key. Defaults to {@code handoff}. */
  public RelayBuilder keyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
    return this;
  }

  /** A topic to publish, with its shard count (which must match the producers'). At least one is required. */
  public RelayBuilder topic(TopicConfig topic) {
    topics.add(Objects.requireNonNull(topic, "topic"));
    return this;
  }

  /**
   * A topic with one shard, stated: {@code start()} records it if the topic has no count on record and refuses to
   * start if another count is. Unlike a consumer's {@code topic(String)}, which reads the recorded count, a relay
   * never reads its topics' counts: it is where they are declared.
   */
  public RelayBuilder topic(String topic) {
    return topic(TopicConfig.of(topic));
  }

  /** This relay's name in leases. Defaults to {@code relay-<host>-<pid>-<random>}, unique per process. */
  public RelayBuilder owner(String owner) {
    this.owner = owner;
    return this;
  }

  /** How long a lease lasts without renewal (renewed every third of it). Defaults to 10 s. */
  public RelayBuilder leaseTtl(Duration leaseTtl) {
    this.leaseTtl = leaseTtl;
    return this;
  }

  /** Bounds of the adaptive batch size: it doubles while batches come back full. Defaults to 50 and 1000. */
  public RelayBuilder batchSize(int min, int max) {
    this.minBatchSize = min;
    this.maxBatchSize = max;
    return this;
  }

  /** The largest total payload sent to Redis in one call. Defaults to 8 MiB. */
  public RelayBuilder maxBatchBytes(int maxBatchBytes) {
    this.maxBatchBytes = maxBatchBytes;
    return this;
  }

  /**
   * The longest wait between looks at the outbox without a notification. Defaults to 1 s. It is also how long a new
   * row may wait when notifications cannot arrive (see {@link #notificationDataSource}). While they do arrive (the
   * LISTEN connection is up and its probe NOTIFY came back), the relay falls asleep after about 30 ms without rows:
   * from then on every append to its shards wakes it at once, and, while no owned shard has rows waiting for room in
   * a list, it looks 10 times less often. An idle relay then costs under 2 transactions a second whatever it owns,
   * and a row written by something other than handoff (no notification) waits at most 10 intervals.
   */
  public RelayBuilder idlePollInterval(Duration interval) {
    this.idlePollInterval = interval;
    return this;
  }

  /** How long published rows are kept for replay and repair. Defaults to 7 days. */
  public RelayBuilder outboxRetention(Duration retention) {
    this.outboxRetention = retention;
    return this;
  }

  /** Rows deleted per retention statement. Defaults to 1000. */
  public RelayBuilder retentionBatchSize(int rows) {
    this.retentionBatchSize = rows;
    return this;
  }

  /**
   * How often a maintenance run starts: trim every owned stream to what its groups finished, store the watermark,
   * purge published rows past the outbox retention. Runs on schedule under any load, in slices between publish
   * cycles. Defaults to 30 s.
   */
  public RelayBuilder maintenanceInterval(Duration interval) {
    this.maintenanceInterval = interval;
    return this;
  }

  /**
   * The most stream entries evicted per trim call, which bounds how long one call holds Redis; a trim repeats calls
   * until it caught up. Defaults to 10,000.
   */
  public RelayBuilder trimLimit(int entries) {
    this.trimLimit = entries;
    return this;
  }

  /**
   * Whether the relay trims streams at all. Off, every entry stays in its stream, so Redis memory grows with every
   * message: only for demos and tests that replay a whole stream through a consumer group (a replay from the outbox
   * needs no such thing). The outbox purge runs either way. Defaults to on.
   */
  public RelayBuilder trimStreams(boolean trim) {
    this.trimStreams = trim;
    return this;
  }

  /**
   * How many entries a stream may gain after its last trim before the relay trims it again, right after publishing
   * (besides every maintenance run). In steady state a stream holds what some group has not finished plus at most
   * about this many entries, plus Redis's stream node size ({@code stream-node-max-entries}, 100 by default), since
   * trimming evicts whole nodes. Defaults to 1,000.
   */
  public RelayBuilder trimSlack(int entries) {
    this.trimSlack = entries;
    return this;
  }

  /**
   * How long an entry stays in its stream after every group finished it. After a failover to an asynchronous
   * standby, the entries of the commits the database lost are the newest ones: with a margin longer than the time
   * from the failover to the operator's look, {@code handoff failover-report} still lists them and {@code handoff
   * rewind} can deliver them again (docs/guarantees.md#a-database-failover). Costs Redis memory: about the margin
   * times the publish rate, in entries. A Redis at {@code maxmemory} trims into the margin, so that it drains. An
   * entry's age is the relay's {@link #clock} minus the time in its ID (the database's clock when it was assigned).
   * Defaults to zero: an entry goes at the first trim after every group finished it.
   */
  public RelayBuilder trimMargin(Duration margin) {
    this.trimMargin = margin;
    return this;
  }

  /**
   * What the relay does when it finds that the database went back in time (a failover to a standby that had not
   * received the last commits; docs/guarantees.md#a-database-failover). By default (false) it reports it (ERROR
   * line, metric, health {@code database-rewound}) and goes on publishing above the stream's top, so that new
   * messages flow: stopping undoes nothing that was lost. With true it also stops publishing that shard, and every
   * relay that takes the shard's lease stays stopped, until an operator has looked ({@code handoff
   * failover-report}) and runs {@code handoff resume --topic T}, which clears the pause in the lease row; the relay
   * looks each cycle while paused. Meanwhile the shard's rows wait in the outbox and health says which shards wait.
   */
  public RelayBuilder pauseOnDatabaseRewind(boolean pause) {
    this.pauseOnDatabaseRewind = pause;
    return this;
  }

  /**
   * How long one maintenance run may take in all (trims and purge), spent in slices of at most 50 ms between
   * publish cycles so that publishing goes on. Past it the run stops and its {@link RetentionReport} says what is
   * left. Defaults to half the maintenance interval.
   */
  public RelayBuilder retentionBudget(Duration budget) {
    this.retentionBudget = budget;
    return this;
  }

  /** How long {@link Relay#close()} waits for assigned rows to be published. Defaults to 10 s. */
  public RelayBuilder drainTimeout(Duration timeout) {
    this.drainTimeout = timeout;
    return this;
  }

  /**
   * Where the relay's LISTEN connection comes from, when it must not be the main data source: LISTEN needs a server
   * session of its own for as long as the relay runs, which a pooler in transaction mode (PgBouncer's
   * {@code pool_mode = transaction}) does not give. Pass a direct connection to PostgreSQL here (one connection is
   * held; no pool is needed) and keep the pooled data source for the rest. Defaults to the main data source.
   *
   * <p>Either way, the relay checks that its LISTEN connection keeps one server session (its backend neither
   * changes between statements nor serves another connection's open transaction of the main data source) and, after
   * LISTEN, that a NOTIFY sent through the main data source (as appends send theirs) arrives within 5 s. If not, it
   * logs one WARN line that says it polls the outbox every {@link #idlePollInterval} instead and how to fix it, and
   * stops listening.
   */
  public RelayBuilder notificationDataSource(DataSource notificationDataSource) {
    this.notificationDataSource = Objects.requireNonNull(notificationDataSource, "notificationDataSource");
    return this;
  }

  /** Callbacks for metrics. Defaults to {@link RelayListener#NOOP}. */
  public RelayBuilder listener(RelayListener listener) {
    this.listener = listener;
    return this;
  }

  /**
   * Publishes the relay's metrics to {@code registry} (Micrometer, an optional dependency: without this call the
   * relay needs none of it): rows published, commit-to-stream latency, leases owned and lost, repairs, cycle
   * failures, and per configured shard the outbox depth, the oldest unpublished row's age and the stream's length.
   * Tags are {@code topic} and {@code shard}. The gauges that need a query are refreshed every
   * {@link #metricsRefreshInterval}, on a thread of their own, never on a scrape. docs/operations.md lists every
   * meter. Defaults to no metrics.
   */
  public RelayBuilder meterRegistry(MeterRegistry registry) {
    this.meterRegistry = Objects.requireNonNull(registry, "meterRegistry");
    return this;
  }

  /**
   * How often the gauges that need a query are refreshed: one bounded count (up to 10,000 rows) and one index
   * look-up per configured shard, plus one XLEN or LLEN. Defaults to 10 s.
   */
  public RelayBuilder metricsRefreshInterval(Duration interval) {
    this.metricsRefreshInterval = interval;
    return this;
  }

  /**
   * The wall clock the relay reads for what it reports and for its retention cut: the time of a retention report,
   * the time since which a failure lasts in its health, the age below which a stream with no consumer group keeps
   * its entries (now minus the outbox retention), and the age of entries against the {@link #trimMargin}. It does
   * not pace the relay: cycles, leases and maintenance are scheduled on {@link System#nanoTime()}, which a test
   * controls with {@code relayOnce()} and {@code maintainOnce()} instead. Defaults to the system UTC clock.
   */
  public RelayBuilder clock(Clock clock) {
    this.clock = clock;
    return this;
  }

  /**
   * Where the relay hands rows to: one Redis stream per shard ({@link Transport#STREAM}) or one Redis list per shard
   * used as a reliable queue ({@link Transport#LIST}, consumed by {@code ListConsumer}). Same leases, fencing and
   * exactly-once hand-off either way. Defaults to streams.
   */
  public RelayBuilder transport(Transport transport) {
    this.transport = Objects.requireNonNull(transport, "transport");
    return this;
  }

  /**
   * Publishes to Redis lists, bounded at {@code capacity} elements per shard: waiting in the list plus taken by
   * consumers and not finished (in their processing lists). At the bound the relay stops pushing and the backlog
   * stays in the outbox, where the producers' {@link CapacityPolicy} sees it. Defaults to 10,000.
   */
  public RelayBuilder listTransport(int capacity) {
    this.transport = Transport.LIST;
    this.listCapacity = capacity;
    return this;
  }

  /**
   * Makes {@link Relay#health()} report {@code DEGRADED} ({@code backlog-old}) while the oldest unpublished row of a
   * configured topic (whichever relay owns its shard) is older than {@code threshold}, by the database clock. The
   * started relay's own thread looks, in one statement with one index probe per shard, at the start of a cycle at
   * most every {@code threshold / 2} (between 100 ms and 10 s); {@code health()} reads the last answer, so a relay
   * whose cycles cannot reach the database reports {@code database-unreachable} and its last backlog answer. Off
   * by default ({@link Duration#ZERO}).
   */
  public RelayBuilder backlogAgeThreshold(Duration threshold) {
    this.backlogAgeThreshold = threshold;
    return this;
  }

  /**
   * Hooks called at the relay's crash points, so that a test (or a demo) can freeze, fail or end the relay where it
   * matters; see {@link RelayFaults}. Defaults to {@link RelayFaults#NONE}.
   */
  public RelayBuilder faults(RelayFaults faults) {
    this.faults = Objects.requireNonNull(faults, "faults");
    return this;
  }

  /**
   * Validates the settings and builds the relay (not started), with a Redis pool of its own (up to 8 connections,
   * per node of a cluster) that it closes when it closes.
   *
   * @throws IllegalArgumentException naming the first invalid setting
   * @throws redis.clients.jedis.exceptions.JedisException on a cluster spec whose seeds do not answer (the cluster
   *     client reads the slot map as it is built); a single server is not contacted until the relay works
   */
  public Relay build() {
    RelayConfig config = config();
    RelayCollaborators collaborators = collaborators();
    return RelayFactory.create(dataSource, notificationDataSource,
        RedisClients.open(redis, REDIS_CONNECTIONS, REDIS_POOL_WAIT, "handoff-relay"), config, collaborators,
        meterRegistry, metricsRefreshInterval);
  }

  /**
   * As {@link #build()}, on a client made by the caller instead of one opened from the spec; the relay owns it from
   * here. Package-private: a test of the relay's Redis round trips counts them on a client of its own.
   */
  Relay buildOn(UnifiedJedis client) {
    return RelayFactory.create(dataSource, notificationDataSource, client, config(), collaborators(), meterRegistry,
        metricsRefreshInterval);
  }

  private RelayConfig config() {
    if (meterRegistry != null && (metricsRefreshInterval == null || metricsRefreshInterval.isNegative()
        || metricsRefreshInterval.isZero())) {
      throw new IllegalArgumentException("metricsRefreshInterval must be positive, was " + metricsRefreshInterval);
    }
    return new RelayConfig(schema, keyPrefix, topics, owner != null ? owner : RelayFactory.defaultOwner(),
        transport,
        new RelayConfig.Publishing(minBatchSize, maxBatchSize, maxBatchBytes, idlePollInterval, listCapacity),
        new RelayConfig.Leases(leaseTtl, drainTimeout),
        new RelayConfig.Retention(outboxRetention, retentionBatchSize, maintenanceInterval,
            retentionBudget != null ? retentionBudget : half(maintenanceInterval)),
        new RelayConfig.Trimming(trimStreams, trimLimit, trimSlack, trimMargin),
        new RelayConfig.Checks(backlogAgeThreshold, pauseOnDatabaseRewind));
  }

  /** The listener, clock and fault hooks: checked before any Redis client is opened. */
  private RelayCollaborators collaborators() {
    return new RelayCollaborators(Objects.requireNonNull(listener, "listener"), Objects.requireNonNull(clock, "clock"),
        faults);
  }

  private static Duration half(Duration interval) {
    return interval == null ? null : interval.dividedBy(2);
  }
}
