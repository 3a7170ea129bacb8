package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.InboxPurgeResult;
import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.internal.TopicRegistry;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;

/**
 * What a consumer does that depends neither on its lifecycle nor on its transport: dead letters (list, retry,
 * requested retries), replay from the outbox, which messages were processed, the inbox purge; and what the
 * workers share with them (the settings, the collaborators, the batch settler, the outcome reporter).
 * {@link AbstractConsumer} adds the lifecycle.
 *
 * <p>Thread-safe: every field is final and thread-safe.
 */
abstract class ConsumerOperations {

  protected final ConsumerConfig config;
  protected final Collaborators collaborators;
  protected final BatchSettler settler;
  protected final DeadLetterService deadLetters;
  private final DataSource dataSource;
  private final InboxQueries inbox;
  private final OutcomeReporter reporter;
  private final OutboxReplay outboxReplay;
  private final ReplayRequests replays;
  /** The dead-letter retries and the inbox purge, which the lifecycle schedules and stops. */
  final GroupUpkeep upkeep;

  /**
   * @param workerLabel how a worker's log lines start ({@code "Consumer"})
   * @param unit what the transport calls one delivery ({@code "entry"})
   * @param label how the group's log lines start ({@code "Consumer group"})
   */
  ConsumerOperations(ConsumerConfig config, Collaborators collaborators, DataSource dataSource,
      SettleOptions settling, Logger log, String workerLabel, String unit, String label) {
    this.config = config;
    this.collaborators = collaborators;
    this.dataSource = dataSource;
    this.settler = new BatchSettler(config, collaborators, dataSource, settling);
    this.deadLetters = new DeadLetterService(config, collaborators, dataSource, settling.transactions());
    this.inbox = new InboxQueries(config.schema());
    this.reporter = new OutcomeReporter(log, workerLabel, unit, collaborators.listener());
    this.outboxReplay = new OutboxReplay(config, dataSource, settler, this::keyOfShard);
    this.replays = new ReplayRequests(config.schema());
    this.upkeep = new GroupUpkeep(config, deadLetters,
        new InboxPurger(config, collaborators.clock(), dataSource, inbox, this::redisFloor), reporter, log, label,
        this::runNextReplayRequest);
  }

  protected final OutcomeReporter reporter() {
    return reporter;
  }

  /** The immutable settings this consumer runs with. */
  public final ConsumerConfig config() {
    return config;
  }

  /**
   * Declares the topic with this consumer's shard count, or checks it against the count on record. A database not
   * reachable yet leaves the check to the next start: the workers wait for the database anyway.
   *
   * @param who how the refusal names this consumer ("consumer of group 'billing'")
   * @throws dev.handoff.core.TopicMismatchException naming the topic and both counts
   */
  protected final void requireDeclaredShards(String who, Logger log) {
    try (Connection c = dataSource.getConnection()) {
      new TopicRegistry(config.schema()).requireSame(c, config.topic().name(), config.topic().shards(), who);
    } catch (SQLException e) {
      log.warn("{}: could not check the shard count of topic '{}' at start ({})", who, config.topic().name(),
          e.toString());
    }
  }

  /** The stream or list key that shard {@code shard}'s messages are delivered on. */
  protected abstract String keyOfShard(int shard);

  /**
   * The position below which Redis holds nothing of the topic, {ms, seq}, for the inbox purge's rule.
   *
   * @throws dev.handoff.consumer.InboxPurgeRefusedException when it cannot be known
   */
  protected abstract long[] redisFloor();

  /** See {@link dev.handoff.consumer.HandoffConsumer#replayFromOutbox}; reports to the counters and listener. */
  public final ReplayResult replayFromOutbox(OutboxRange range) {
    Objects.requireNonNull(range, "range");
    return outboxReplay.run(range, reporter::handled, soFar -> reporter.emit(l -> l.replayProgress(soFar)));
  }

  /**
   * Runs the group's oldest open replay request on this consumer's topic, if any other consumer does not run it
   * already ({@link dev.handoff.consumer.admin.DeadLetterAdmin#requestReplay}).
   *
   * @return its outcome, or empty when none was open
   * @throws ConsumerException if the database failed; the request stays open
   */
  final Optional<ReplayResult> runNextReplayRequest() {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        Optional<ReplayResult> r = replays.runNext(c, config.group(), config.topic().name(), this::replayFromOutbox);
        c.commit();
        return r;
      } catch (SQLException | RuntimeException e) {
        Jdbc.rollbackQuietly(c);
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new ConsumerException("a requested replay of consumer group '" + config.group() + "' failed in the"
          + " database", e);
    }
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#processed}. */
  public final Set<UUID> processed(Collection<UUID> messageIds) {
    List<UUID> ids = List.copyOf(messageIds);
    if (ids.isEmpty()) {
      return Set.of();
    }
    try (Connection c = dataSource.getConnection()) {
      return inbox.processed(c, config.group(), ids);
    } catch (SQLException e) {
      throw new ConsumerException("could not read the inbox markers of consumer group '" + config.group() + "'", e);
    }
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#deadLetters}. */
  public final List<DeadLetter> deadLetters(int limit) {
    return deadLetters.list(limit);
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#retry}; a retry that ran tells the listener it was handled. */
  public final boolean retry(long deadLetterId) {
    return upkeep.retry(deadLetterId);
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#retryAll}. */
  public final int retryAll() {
    return upkeep.retryAll();
  }

  /** Runs the open retry and replay requests now, as the schedule does. */
  final int runRequestedNow() {
    return upkeep.runRequested();
  }


  /** See {@link dev.handoff.consumer.StreamConsumer#purgeInbox(Instant)}. */
  public final long purgeInbox(Instant processedBefore) {
    return upkeep.purgeInbox(processedBefore);
  }

  /** See {@link dev.handoff.consumer.HandoffConsumer#purgeInbox()}. */
  public final InboxPurgeResult purgeInbox() {
    return upkeep.purgeInbox();
  }
}
