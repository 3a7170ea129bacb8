package dev.handoff.relay.internal;

import dev.handoff.core.internal.Statements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * Statements sent to PostgreSQL as one, so that the relay waits for one round trip where it waited for one per
 * statement plus a {@code BEGIN} and a {@code COMMIT}.
 *
 * <p>pgjdbc sends the statements of one execute with a single {@code Sync}. On a connection in auto-commit the
 * server runs everything before a {@code Sync} as one implicit transaction: the statements commit together, or a
 * failing one rolls back those before it. In an open transaction {@link #runAndCommit} ends the execute with
 * {@code COMMIT}: the transaction's earlier statements, these and the commit cost one round trip, and a failing
 * statement leaves the transaction aborted and nothing committed. {@code RoundTripTest} checks all of it on the real
 * server, so that a driver that behaved otherwise fails the build. Each statement sees what the ones before it
 * wrote. Behind PgBouncer in
 * transaction mode the whole execute is one transaction on one server connection, and every statement is the unnamed
 * one ({@link Statements}). Every statement must return a result set.
 *
 * <p>A round trip made {@link #atOnce} sends each statement as it is added instead, for a caller whose next
 * statements depend on an earlier one's outcome: the same steps, written once, run either way. Not thread-safe;
 * used once.
 */
final class RoundTrip {

  /** Binds a statement's parameters from {@code first} on; returns the index after its last. */
  @FunctionalInterface
  interface Binder {
    int bind(Connection c, PreparedStatement ps, int first) throws SQLException;
  }

  /** Reads a statement's result set. */
  @FunctionalInterface
  interface Reader<T> {
    T read(ResultSet rs) throws SQLException;
  }

  /** One statement: its SQL (no trailing semicolon), its parameters and how its result is read. */
  record Part<T>(String sql, Binder binder, Reader<T> reader) {}

  /** Where a part's result is found once {@link #run} returned. */
  static final class Result<T> {
    private T value;
    private boolean set;

    T get() {
      if (!set) {
        throw new IllegalStateException("the round trip has not run");
      }
      return value;
    }
  }

  private record Entry<T>(Part<T> part, Result<T> result) {}

  private final List<Entry<?>> entries = new ArrayList<>();
  /** Where each statement runs as it is added; null for a round trip that sends them together. */
  private final Connection immediate;

  /** A round trip that sends its statements together, when it runs. */
  RoundTrip() {
    this(null);
  }

  private RoundTrip(Connection immediate) {
    this.immediate = immediate;
  }

  /**
   * A round trip whose statements run on {@code c} as they are added, each result ready at once: in auto-commit each
   * commits on its own; in a transaction {@link #runAndCommit} commits them.
   */
  static RoundTrip atOnce(Connection c) {
    return new RoundTrip(c);
  }

  /** Whether each statement runs as it is added, so that its result can be read before the next is added. */
  boolean runsAtOnce() {
    return immediate != null;
  }

  /** Adds a statement after those added before. */
  <T> Result<T> add(Part<T> part) throws SQLException {
    Result<T> result = new Result<>();
    Entry<T> entry = new Entry<>(part, result);
    if (immediate != null) {
      send(immediate, List.<Entry<?>>of(entry), false);
    } else {
      entries.add(entry);
    }
    return result;
  }

  int size() {
    return entries.size();
  }

  /** Sends every statement in one execute; on a connection in auto-commit, they commit as one transaction. */
  void run(Connection c) throws SQLException {
    send(c, entries, false);
  }

  /**
   * Sends every statement and then {@code COMMIT} in one execute, ending the transaction the connection (not in
   * auto-commit) has open, with the statements it ran before: one round trip for the statements and the commit.
   * The caller's {@code commit()} afterwards finds no transaction and sends nothing. Should a statement fail, the
   * transaction is aborted, the {@code COMMIT} is not run, and the caller rolls back.
   */
  void runAndCommit(Connection c) throws SQLException {
    if (c.getAutoCommit()) {
      throw new IllegalStateException("runAndCommit needs a connection with a transaction open");
    }
    if (immediate != null) {
      c.commit(); // every statement ran already
    } else {
      send(c, entries, true);
    }
  }

  private static void send(Connection c, List<Entry<?>> entries, boolean commit) throws SQLException {
    if (entries.isEmpty() && !commit) {
      return;
    }
    StringBuilder sql = new StringBuilder();
    for (Entry<?> e : entries) {
      if (sql.length() > 0) {
        sql.append(";\n");
      }
      sql.append(e.part().sql());
    }
    if (commit) {
      sql.append(sql.length() > 0 ? ";\n" : "").append("COMMIT");
    }
    try (PreparedStatement ps = Statements.prepare(c, sql.toString())) {
      int next = 1;
      for (Entry<?> e : entries) {
        next = e.part().binder().bind(c, ps, next);
      }
      boolean hasRows = ps.execute();
      for (int i = 0; i < entries.size(); i++) {
        if (i > 0) {
          hasRows = ps.getMoreResults();
        }
        if (!hasRows) {
          throw new IllegalStateException("statement " + (i + 1) + " of a round trip returned no result set");
        }
        try (ResultSet rs = ps.getResultSet()) {
          read(entries.get(i), rs);
        }
      }
    }
  }

  /** Runs one statement on its own (in auto-commit or in the caller's transaction) and returns its result. */
  static <T> T one(Connection c, Part<T> part) throws SQLException {
    return atOnce(c).add(part).get();
  }

  private static <T> void read(Entry<T> e, ResultSet rs) throws SQLException {
    e.result().value = e.part().reader().read(rs);
    e.result().set = true;
  }
}
