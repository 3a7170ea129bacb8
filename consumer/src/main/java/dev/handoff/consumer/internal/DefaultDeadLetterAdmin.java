package dev.handoff.consumer.internal;

import dev.handoff.consumer.ConsumerConfig;
import dev.handoff.consumer.ConsumerException;
import dev.handoff.consumer.admin.DeadLetterAdmin;
import dev.handoff.consumer.admin.DeadLetterSelection;
import dev.handoff.consumer.admin.RetryRequestResult;
import dev.handoff.consumer.status.DeadLetter;
import dev.handoff.core.TopicConfig;
import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The default {@link DeadLetterAdmin}: plain SQL on the {@code dead_letter} table, one transaction per call. A
 * request only sets {@code retry_requested_at}; the consumers' housekeeping runs it (see
 * {@link DeadLetterService#runNextRequested}).
 *
 * <p>Thread-safe: it keeps no state between calls.
 */
public final class DefaultDeadLetterAdmin implements DeadLetterAdmin {

  private static final int MAX_LIMIT = 100_000;

  private final DataSource dataSource;
  private final String table;
  private final String leases;
  private final ReplayRequests replays;

  public DefaultDeadLetterAdmin(DataSource dataSource, String schema) {
    this.dataSource = dataSource;
    this.table = schema + ".dead_letter";
    this.leases = schema + ".consumer_lease";
    this.replays = new ReplayRequests(schema);
  }

  @Override
  public long requestReplay(String group, String topic, Instant from, Instant to) {
    if (group == null || !ConsumerConfig.NAME_PATTERN.matcher(group).matches()) {
      throw new IllegalArgumentException("group '" + group + "' is not a consumer group name");
    }
    TopicConfig.requireValidName(topic);
    Objects.requireNonNull(from, "from");
    if (to != null && to.isBefore(from)) {
      throw new IllegalArgumentException("the replay's end " + to + " is before its start " + from);
    }
    try (Connection c = dataSource.getConnection()) {
      return replays.request(c, group, topic, from, to);
    } catch (SQLException e) {
      throw new ConsumerException("could not request a replay of topic '" + topic + "' for consumer group '" + group
          + "'", e);
    }
  }

  @Override
  public boolean resumeShard(String group, String topic, int shard, boolean skip) {
    if (group == null || !ConsumerConfig.NAME_PATTERN.matcher(group).matches()) {
      throw new IllegalArgumentException("group '" + group + "' is not a consumer group name");
    }
    TopicConfig.requireValidName(topic);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = Statements.prepare(c, "UPDATE " + leases + " SET resume_requested = ?"
            + " WHERE consumer_group = ? AND topic = ? AND shard = ? AND stopped_at IS NOT NULL")) {
      ps.setString(1, skip ? "skip" : "retry");
      ps.setString(2, group);
      ps.setString(3, topic);
      ps.setInt(4, shard);
      return ps.executeUpdate() > 0;
    } catch (SQLException e) {
      throw new ConsumerException("could not resume shard " + shard + " of topic '" + topic + "' for consumer group '"
          + group + "'", e);
    }
  }

  @Override
  public Optional<ReplayRequest> replayRequest(long id) {
    try (Connection c = dataSource.getConnection()) {
      return replays.read(c, id);
    } catch (SQLException e) {
      throw new ConsumerException("could not read replay request " + id, e);
    }
  }

  @Override
  public List<DeadLetter> list(String group, DeadLetterSelection selection, int limit) {
    Objects.requireNonNull(selection, "selection");
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new IllegalArgumentException("limit must be between 1 and " + MAX_LIMIT + ", was " + limit);
    }
    Where w = new Where(group, selection);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = Statements.prepare(c, "SELECT " + DeadLetterQueries.COLUMNS + " FROM " + table
            + w.sql + " ORDER BY id DESC LIMIT " + limit)) {
      w.bind(ps, 1);
      return read(ps);
    } catch (SQLException e) {
      throw new ConsumerException("could not list the dead letters of " + w.scope(), e);
    }
  }

  @Override
  public Optional<DeadLetter> show(long id) {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = Statements.prepare(c, "SELECT " + DeadLetterQueries.COLUMNS + " FROM " + table
            + " WHERE id = ?")) {
      ps.setLong(1, id);
      return read(ps).stream().findFirst();
    } catch (SQLException e) {
      throw new ConsumerException("could not read dead letter " + id, e);
    }
  }

  @Override
  public RetryRequestResult requestRetry(String group, DeadLetterSelection selection) {
    Where w = new Where(group, Objects.requireNonNull(selection, "selection"));
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        if (selection.singleId().isPresent()) {
          requireRetryable(c, w, selection.singleId().getAsLong());
        }
        // A request already open keeps its time: asking twice is one request, run once.
        long requested = update(c, "UPDATE " + table + " SET retry_requested_at = coalesce(retry_requested_at, now())"
            + w.sql + " AND status = 'dead' AND " + DeadLetterQueries.RETRYABLE, w);
        long notRetryable = count(c, "SELECT count(*) FROM " + table + w.sql + " AND status = 'dead' AND NOT ("
            + DeadLetterQueries.RETRYABLE + ")", w);
        c.commit();
        return new RetryRequestResult(requested, notRetryable);
      } catch (RuntimeException | SQLException e) {
        Jdbc.rollbackQuietly(c);
        throw e;
      } finally {
        c.setAutoCommit(true);
      }
    } catch (SQLException e) {
      throw new ConsumerException("could not request a retry of the dead letters of " + w.scope() + " ("
          + selection + ")", e);
    }
  }

  @Override
  public long purge(String group, DeadLetterSelection selection) {
    Where w = new Where(group, Objects.requireNonNull(selection, "selection"));
    try (Connection c = dataSource.getConnection()) {
      long deleted = update(c, "DELETE FROM " + table + w.sql, w);
      if (deleted == 0 && selection.singleId().isPresent()) {
        throw new ConsumerException(w.noSuch(selection.singleId().getAsLong()));
      }
      return deleted;
    } catch (SQLException e) {
      throw new ConsumerException("could not purge the dead letters of " + w.scope() + " (" + selection + ")", e);
    }
  }

  /** Refuses, with one line naming the id, what a request for dead letter {@code id} could not do. */
  private void requireRetryable(Connection c, Where w, long id) throws SQLException {
    List<DeadLetter> found;
    try (PreparedStatement ps = Statements.prepare(c, "SELECT " + DeadLetterQueries.COLUMNS + " FROM " + table
        + w.sql + " FOR UPDATE")) {
      w.bind(ps, 1);
      found = read(ps);
    }
    if (found.isEmpty()) {
      throw new ConsumerException(w.noSuch(id));
    }
    DeadLetter d = found.get(0);
    if (d.state() == DeadLetter.State.RETRIED) {
      throw new ConsumerException("dead letter " + id + " of consumer group '" + d.group() + "' was already retried"
          + (d.retry().retriedAt() == null ? "" : " at " + d.retry().retriedAt()));
    }
    if (!d.retryable()) {
      throw new ConsumerException("dead letter " + id + " of consumer group '" + d.group() + "' cannot be retried:"
          + " its entry could not be decoded or was lost, so the message is not stored (" + firstLine(d.error())
          + ")");
    }
  }

  private static String firstLine(String text) {
    int nl = text.indexOf('\n');
    return (nl < 0 ? text : text.substring(0, nl)).strip();
  }

  private static long update(Connection c, String sql, Where w) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      w.bind(ps, 1);
      return ps.executeUpdate();
    }
  }

  private static long count(Connection c, String sql, Where w) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(c, sql)) {
      w.bind(ps, 1);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  private static List<DeadLetter> read(PreparedStatement ps) throws SQLException {
    List<DeadLetter> out = new ArrayList<>();
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        out.add(DeadLetterQueries.read(rs));
      }
    }
    return out;
  }

  /** The WHERE clause of a group (or every group) and a selection, with its parameters. */
  private static final class Where {

    final String sql;
    private final String group;
    private final DeadLetterSelection selection;

    Where(String group, DeadLetterSelection selection) {
      this.group = group;
      this.selection = selection;
      StringBuilder b = new StringBuilder(" WHERE true");
      if (group != null) {
        b.append(" AND consumer_group = ?");
      }
      if (selection.singleId().isPresent()) {
        b.append(" AND id = ?");
      }
      if (selection.since() != null) {
        b.append(" AND dead_at >= ?");
      }
      this.sql = b.toString();
    }

    void bind(PreparedStatement ps, int first) throws SQLException {
      int i = first;
      if (group != null) {
        ps.setString(i++, group);
      }
      if (selection.singleId().isPresent()) {
        ps.setLong(i++, selection.singleId().getAsLong());
      }
      if (selection.since() != null) {
        ps.setTimestamp(i, Timestamp.from(selection.since()));
      }
    }

    String noSuch(long id) {
      return "no dead letter " + id + (group == null ? "" : " in consumer group '" + group + "'");
    }

    String scope() {
      return group == null ? "any consumer group" : "consumer group '" + group + "'";
    }
  }
}
