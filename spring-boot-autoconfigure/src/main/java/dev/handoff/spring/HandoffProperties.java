package dev.handoff.spring;

import dev.handoff.consumer.ordering.WhenExhausted;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * handoff's settings under {@code handoff.*}. A topic's shard count is declared once, under {@code handoff.topics},
 * and the outbox, the relay and every listener of the application read it from there.
 *
 * <pre>
 * handoff:
 *   redis:
 *     url: redis://localhost:6379
 *   topics:
 *     orders:
 *       shards: 4
 * </pre>
 *
 * <p>Not thread-safe while Spring binds it; read-only afterwards.
 */
@ConfigurationProperties("handoff")
public class HandoffProperties {

  /** The schema of handoff's tables. */
  private String schema = "handoff";

  /** The prefix of every Redis key handoff writes. */
  private String keyPrefix = "handoff";

  /**
   * Apply handoff's migrations at start-up. When false, start-up only checks that the schema is migrated and that the
   * application's role holds the grants of what it runs (outbox, relay, listeners), and fails in one line if not.
   */
  private boolean migrate = false;

  /** How long the relay and the listeners may take to finish in-flight work when the application stops. */
  private Duration shutdownTimeout = Duration.ofSeconds(10);

  private final Redis redis = new Redis();

  /** The topics, by name: each with its shard count. */
  private Map<String, Topic> topics = new LinkedHashMap<>();

  private final Relay relay = new Relay();

  /** Settings of the consumer groups of the application's listeners, by group name. */
  private Map<String, Group> consumers = new LinkedHashMap<>();

  public String getSchema() {
    return schema;
  }

  public void setSchema(String schema) {
    this.schema = schema;
  }

  public String getKeyPrefix() {
    return keyPrefix;
  }

  public void setKeyPrefix(String keyPrefix) {
    this.keyPrefix = keyPrefix;
  }

  public boolean isMigrate() {
    return migrate;
  }

  public void setMigrate(boolean migrate) {
    this.migrate = migrate;
  }

  public Duration getShutdownTimeout() {
    return shutdownTimeout;
  }

  public void setShutdownTimeout(Duration shutdownTimeout) {
    this.shutdownTimeout = shutdownTimeout;
  }

  public Redis getRedis() {
    return redis;
  }

  public Map<String, Topic> getTopics() {
    return topics;
  }

  public void setTopics(Map<String, Topic> topics) {
    this.topics = topics;
  }

  public Relay getRelay() {
    return relay;
  }

  public Map<String, Group> getConsumers() {
    return consumers;
  }

  public void setConsumers(Map<String, Group> consumers) {
    this.consumers = consumers;
  }

  /** Where Redis is. */
  public static class Redis {

    /** The Redis server: redis://host:port, or rediss://host:port for TLS; user and password may be in the URL. */
    private String url;

    /** Seeds of a Redis Cluster (host:port each); when set, the URL gives the scheme and credentials only. */
    private List<String> clusterSeeds = new ArrayList<>();

    /** A PEM file of the certificate authorities to trust for rediss://; the JVM's trust store when unset. */
    private Path caFile;

    /** A PEM client certificate for rediss:// (with key-file). */
    private Path certificateFile;

    /** The PEM private key of certificate-file. */
    private Path keyFile;

    /** Whether the server's certificate must name its host. */
    private boolean verifyHostname = true;

    /** How long a connection to Redis may take. */
    private Duration connectTimeout = Duration.ofSeconds(2);

    /** How long a Redis reply may take. */
    private Duration socketTimeout = Duration.ofSeconds(2);

    public String getUrl() {
      return url;
    }

    public void setUrl(String url) {
      this.url = url;
    }

    public List<String> getClusterSeeds() {
      return clusterSeeds;
    }

    public void setClusterSeeds(List<String> clusterSeeds) {
      this.clusterSeeds = clusterSeeds;
    }

    public Path getCaFile() {
      return caFile;
    }

    public void setCaFile(Path caFile) {
      this.caFile = caFile;
    }

    public Path getCertificateFile() {
      return certificateFile;
    }

    public void setCertificateFile(Path certificateFile) {
      this.certificateFile = certificateFile;
    }

    public Path getKeyFile() {
      return keyFile;
    }

    public void setKeyFile(Path keyFile) {
      this.keyFile = keyFile;
    }

    public boolean isVerifyHostname() {
      return verifyHostname;
    }

    public void setVerifyHostname(boolean verifyHostname) {
      this.verifyHostname = verifyHostname;
    }

    public Duration getConnectTimeout() {
      return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
    }

    public Duration getSocketTimeout() {
      return socketTimeout;
    }

    public void setSocketTimeout(Duration socketTimeout) {
      this.socketTimeout = socketTimeout;
    }
  }

  /** One topic. */
  public static class Topic {

    /** How many shards (streams) the topic has; messages of one key keep their order within a shard. */
    private int shards = 1;

    public int getShards() {
      return shards;
    }

    public void setShards(int shards) {
      this.shards = shards;
    }
  }

  /** The relay, run inside the application. */
  public static class Relay {

    /** Run a relay in this application, publishing every declared topic. Turn off where a relay runs apart. */
    private boolean enabled = true;

    /**
     * How long a relay's lease on a shard lasts without renewal: how soon another instance's relay takes over the
     * shards of one that crashed or froze.
     */
    private Duration leaseTtl = Duration.ofSeconds(10);

    /** How often an idle relay looks for new rows when no notification woke it. */
    private Duration idlePollInterval = Duration.ofSeconds(1);

    /**
     * How long a stream entry stays after every group finished it, so that after a database failover the newest
     * entries are still there to report and rewind to. Costs Redis memory; zero trims at once.
     */
    private Duration trimMargin = Duration.ZERO;

    /**
     * When the relay finds that the database went back in time (a failover to a lagging standby), stop publishing
     * that shard until an operator runs handoff resume; false reports it and goes on publishing.
     */
    private boolean pauseOnDatabaseRewind = false;

    public boolean isPauseOnDatabaseRewind() {
      return pauseOnDatabaseRewind;
    }

    public void setPauseOnDatabaseRewind(boolean pauseOnDatabaseRewind) {
      this.pauseOnDatabaseRewind = pauseOnDatabaseRewind;
    }

    public Duration getTrimMargin() {
      return trimMargin;
    }

    public void setTrimMargin(Duration trimMargin) {
      this.trimMargin = trimMargin;
    }

    public Duration getLeaseTtl() {
      return leaseTtl;
    }

    public void setLeaseTtl(Duration leaseTtl) {
      this.leaseTtl = leaseTtl;
    }

    public Duration getIdlePollInterval() {
      return idlePollInterval;
    }

    public void setIdlePollInterval(Duration idlePollInterval) {
      this.idlePollInterval = idlePollInterval;
    }

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }
  }

  /** One consumer group of the application's listeners. */
  public static class Group {

    /** Run this group's listeners; when false they are registered but never started. */
    private boolean enabled = true;

    /** Worker threads of the group in this application. */
    private int workers = 1;

    /** Entries read and committed per transaction. */
    private int batchSize = 100;

    /** Deliveries of a failing message before it becomes a dead letter. */
    private int maxDeliveries = 10;

    /** The first pause after a failed message; it doubles per delivery. */
    private Duration initialBackoff = Duration.ofSeconds(1);

    /**
     * How long an entry stays pending, untouched, before another consumer of the group claims it: how soon the
     * entries of a stopped or crashed instance are taken over. Entries being handled have their lease renewed.
     */
    private Duration minIdle = Duration.ofSeconds(30);

    /**
     * Dead-letter a message whose outbox row this database does not have (a ghost left by a failover to an
     * asynchronous standby) instead of handing it to the listener. Only when the group shares the producer's
     * database; docs/guarantees.md, A database failover.
     */
    private boolean refuseGhosts = false;

    /**
     * Apply each shard's messages in stream order: one owner per shard among the group's instances, a failing
     * message holds up only its shard, a paused former owner cannot commit (Ordering.perShard(); consumer/README.md,
     * Ordered processing per shard). Every instance of the group must say the same.
     */
    private boolean ordered = false;

    /** In an ordered group, what becomes of a message that ran out of deliveries while its shard waits behind it. */
    private WhenExhausted whenExhausted = WhenExhausted.DEAD_LETTER_AND_CONTINUE;

    public boolean isOrdered() {
      return ordered;
    }

    public void setOrdered(boolean ordered) {
      this.ordered = ordered;
    }

    public WhenExhausted getWhenExhausted() {
      return whenExhausted;
    }

    public void setWhenExhausted(WhenExhausted whenExhausted) {
      this.whenExhausted = whenExhausted;
    }

    public boolean isRefuseGhosts() {
      return refuseGhosts;
    }

    public void setRefuseGhosts(boolean refuseGhosts) {
      this.refuseGhosts = refuseGhosts;
    }

    public Duration getMinIdle() {
      return minIdle;
    }

    public void setMinIdle(Duration minIdle) {
      this.minIdle = minIdle;
    }

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public int getWorkers() {
      return workers;
    }

    public void setWorkers(int workers) {
      this.workers = workers;
    }

    public int getBatchSize() {
      return batchSize;
    }

    public void setBatchSize(int batchSize) {
      this.batchSize = batchSize;
    }

    public int getMaxDeliveries() {
      return maxDeliveries;
    }

    public void setMaxDeliveries(int maxDeliveries) {
      this.maxDeliveries = maxDeliveries;
    }

    public Duration getInitialBackoff() {
      return initialBackoff;
    }

    public void setInitialBackoff(Duration initialBackoff) {
      this.initialBackoff = initialBackoff;
    }
  }
}
