package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.ConsumerFaults;
import dev.handoff.consumer.InboundMessage;
import dev.handoff.consumer.OutboxRange;
import dev.handoff.consumer.ReplayResult;
import dev.handoff.core.internal.Json;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the rows of an {@link OutboxRange} through a consumer's own path (inbox marker, handler, commit), a page of
 * {@code batchSize} rows per transaction, without touching Redis. The outbox is the source of truth: it keeps every
 * published row for the outbox retention, whatever the streams were trimmed to. Memory is bounded by one page.
 *
 * <p>Thread-safe: each run keeps its state on its own stack.
 */
final class OutboxReplay {

  private static final Logger log = LoggerFactory.getLogger(OutboxReplay.class);

  private final ConsumerConfig config;
  private final DataSource dataSource;
  private final BatchSettler settler;
  private final OutboxQueries outbox;
  private final IntFunction<String> keyOfShard;

  /**
   * @param keyOfShard the stream or list key a message of shard {@code i} is delivered on, for the handler's view
   */
  OutboxReplay(ConsumerConfig config, DataSource dataSource, BatchSettler settler,
      IntFunction<String> keyOfShard) {
    this.config = config;
    this.dataSource = dataSource;
    this.settler = settler;
    this.outbox = new OutboxQueries(config.schema());
    this.keyOfShard = keyOfShard;
  }

  /** Counts as the replay goes; {@link #snapshot} turns them into a result. */
  private static final class Tally {
    long offered;
    long handled;
    long duplicates;
    long failed;
    final List<ReplayResult.Failure> failures = new ArrayList<>();
    long unpublished;
    long purged;
    long possiblyPurged;
    long missing;

    void fail(ReplayResult.Failure f) {
      failed++;
      offered++;
      if (failures.size() < ReplayResult.MAX_FAILURES_LISTED) {
        failures.add(f);
      }
    }

    ReplayResult snapshot() {
      return new ReplayResult(offered, handled, duplicates, failed, failures, unpublished, purged, possiblyPurged,
          missing);
    }
  }

  /**
   * @param settled called with each page's outcome, for the consumer's counters and listener
   * @param progress called with the totals so far after each page
   * @throws ConsumerException if the database failed; what committed before stays committed
   */
  ReplayResult run(OutboxRange range, Consumer<Settled> settled, Consumer<ReplayResult> progress) {
    Tally t = new Tally();
    String topic = config.topic().name();
    int pageSize = config.reading().batchSize();
    try {
      if (range.messageIds() != null) {
        List<UUID> ids = range.messageIds();
        for (int i = 0; i < ids.size(); i += pageSize) {
          List<UUID> chunk = ids.subList(i, Math.min(ids.size(), i + pageSize));
          List<OutboxQueries.Row> rows = read(topic, range, chunk, 0, chunk.size());
          t.missing += chunk.size() - rows.size();
          settle(rows, t, settled);
          progress.accept(t.snapshot());
        }
      } else {
        long after = 0;
        while (true) {
          List<OutboxQueries.Row> rows = read(topic, range, null, after, pageSize);
          if (rows.isEmpty()) {
            break;
          }
          settle(rows, t, settled);
          after = rows.get(rows.size() - 1).id();
          progress.accept(t.snapshot());
        }
        // Read last, so that a row purged while the replay walked towards it is counted rather than skipped.
        try (Connection c = dataSource.getConnection()) {
          long[] purged = outbox.purged(c, topic, range);
          t.purged = purged[0];
          t.possiblyPurged = purged[1];
        }
      }
    } catch (SQLException e) {
      throw stopped(range, t, e);
    }
    ReplayResult result = t.snapshot();
    log.info("Consumer group '{}': replay of {} from the outbox: {}", config.group(), range, result);
    return result;
  }

  private List<OutboxQueries.Row> read(String topic, OutboxRange range, List<UUID> chunk, long after, int limit)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      return outbox.page(c, topic, range, chunk, after, limit);
    }
  }

  private void settle(List<OutboxQueries.Row> rows, Tally t, Consumer<Settled> settled) {
    List<Delivery> batch = new ArrayList<>(rows.size());
    for (OutboxQueries.Row r : rows) {
      if (!r.published()) {
        t.unpublished++;
        continue;
      }
      try {
        InboundMessage m = new InboundMessage(r.messageId(), r.id(), config.topic().name(), r.type(), r.key(),
            Json.readStringMap(r.headers()), r.createdAt(), r.payload(),
            new InboundMessage.Delivery(keyOfShard.apply(r.shard()), r.streamMs() + "-" + r.streamSeq(), 0));
        batch.add(Delivery.of(m, r.shard()));
      } catch (RuntimeException e) {
        t.fail(new ReplayResult.Failure(r.messageId(), r.id(), new ConsumerException("outbox row " + r.id()
            + " of message " + r.messageId() + " cannot be read as a message: " + e.getMessage(), e)));
      }
    }
    if (batch.isEmpty()) {
      return;
    }
    Settled s = settler.settle(batch, BatchSettler.Mode.REPLAY, ConsumerFaults.NONE);
    if (s.databaseError != null) {
      throw stopped(null, t, s.databaseError);
    }
    settled.accept(s);
    t.offered += s.handled.size() + s.duplicates.size();
    t.handled += s.handled.size();
    t.duplicates += s.duplicates.size();
    for (Settled.Failure f : s.failed) {
      InboundMessage m = f.delivery().message;
      t.fail(new ReplayResult.Failure(m.messageId(), m.outboxId(), f.error()));
    }
  }

  private ConsumerException stopped(OutboxRange range, Tally t, Throwable cause) {
    return new ConsumerException("replay from the outbox for consumer group '" + config.group() + "'"
        + (range == null ? "" : " (" + range + ")") + " stopped by a database failure after " + t.snapshot()
        + "; what it committed stays committed, and a replay can be run again", cause);
  }
}
