package dev.handoff.consumer.internal;

import dev.handoff.core.internal.Statements;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.UUID;

/**
 * A batch's transaction as its handlers see it, kept theirs to write in and handoff's alone to end.
 *
 * <p>Two guards, because a handler can end a transaction two ways:
 * <ul>
 *   <li>Through the connection it was given: {@link #connection()} refuses {@code commit}, {@code rollback()},
 *       {@code setAutoCommit(true)}, {@code close} and {@code abort}, each with a one-line {@link SQLException}
 *       (SQLSTATE {@value #INVALID_TERMINATION}) that names the rule, and remembers the refusal
 *       ({@link #takeRefusal()}) so that a handler that swallowed the exception still fails its message.
 *   <li>Any other way ({@code COMMIT} or {@code ROLLBACK} run as SQL, a {@code commit()} on the driver's connection
 *       under the one it was given): the seal, the setting {@value #SEAL_SETTING} set to the batch's token, local
 *       to the transaction, before the first handler runs (by the inbox markers' statement). Each marker written
 *       queues a deferred trigger that fails any commit finding the setting still there (migration V10), so
 *       PostgreSQL rolls that transaction back, inbox markers and effects together. {@link #commit} clears it in the
 *       round trip of handoff's own {@code COMMIT}; the clearing fails in PostgreSQL if the setting does not hold
 *       the token (the transaction it was set in ended early), and the {@code COMMIT} then never runs.
 * </ul>
 * While a handler runs, {@link RunningHandler} names it on its thread.
 *
 * <p>Not thread-safe: one per batch attempt, on the worker's thread.
 */
final class HandlerTransaction {

  /** PostgreSQL's SQLSTATE for an invalid transaction termination, which the seal's trigger raises too. */
  static final String INVALID_TERMINATION = "2D000";

  /** The setting that seals a batch's transaction while its handlers run, read by migration V10's trigger. */
  static final String SEAL_SETTING = "handoff.batch_seal";

  private final Connection tx;
  private final String group;
  private final String unsealSql;
  private final UUID token = UUID.randomUUID();
  private final Connection guarded;
  private boolean sealed;
  private String running = "a batch";
  private SQLException refusal;

  private HandlerTransaction(Connection tx, String schema, String group) {
    this.tx = tx;
    this.group = group;
    this.unsealSql = "SELECT " + schema + ".batch_unseal(?)";
    this.guarded = (Connection) Proxy.newProxyInstance(HandlerTransaction.class.getClassLoader(),
        new Class<?>[] {Connection.class}, (proxy, method, args) -> invoke(proxy, method, args));
  }

  /**
   * The guard of {@code tx}, whose transaction is open (auto-commit off). It is sealed by {@link #seal}, or by a
   * statement of the caller's that set {@link #SEAL_SETTING} to {@link #token()} (then {@link #sealedBy}), before
   * any handler runs. The seal holds only if that transaction wrote an inbox marker, whose trigger checks it.
   */
  static HandlerTransaction of(Connection tx, String schema, String group) {
    return new HandlerTransaction(tx, schema, group);
  }

  /** Seals the transaction with a statement of its own, once it wrote an inbox marker. */
  HandlerTransaction seal() throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, "SELECT set_config('" + SEAL_SETTING + "', ?, true)")) {
      ps.setString(1, token.toString());
      ps.executeQuery().close();
    }
    sealed = true;
    return this;
  }

  /** The seal's value, for a caller that sets it in a statement of its own. */
  UUID token() {
    return token;
  }

  /** The caller's statement set the seal ({@code true}), or had nothing to do and did not. */
  void sealedBy(boolean set) {
    sealed = set;
  }

  /** The connection to hand to the handlers. */
  Connection connection() {
    return guarded;
  }

  /**
   * Runs a handler call for {@code what} ("message 0190...") with {@link RunningHandler} set on this thread.
   *
   * @throws Exception the refusal, if a call on the handler's connection was refused (with what the handler threw,
   *     if anything, as suppressed); otherwise what the handler threw
   */
  void run(String what, HandlerCall call) throws Exception {
    running = what;
    refusal = null;
    RunningHandler.enter(group, what);
    try {
      call.run(guarded);
    } catch (Exception e) {
      SQLException refused = takeRefusal();
      if (refused == null || refused == e) {
        throw e;
      }
      // The refusal is the cause whatever the handler made of it (jOOQ, Spring wrap it): it leads the dead letter.
      refused.addSuppressed(e);
      throw refused;
    } finally {
      RunningHandler.exit();
    }
    SQLException refused = takeRefusal();
    if (refused != null) {
      throw refused;
    }
  }

  /** The first call the handler made that was refused since the last {@link #run}, or null; cleared by the call. */
  SQLException takeRefusal() {
    SQLException r = refusal;
    refusal = null;
    return r;
  }

  /**
   * Removes the seal, if one was set; the caller commits next.
   *
   * @throws SQLException of SQLSTATE {@value #INVALID_TERMINATION} if the seal was gone: a handler ended the
   *     transaction it was given, and what is open now is a later one, to be rolled back
   */
  void unseal() throws SQLException {
    if (sealed) {
      removeSeal(unsealSql);
    }
  }

  /**
   * Commits: removes the seal and commits in one round trip ({@code SELECT batch_unseal(...); COMMIT}), or only
   * commits when the transaction was not sealed. The removal fails in PostgreSQL when the seal is gone, and then the
   * {@code COMMIT} after it does not run.
   *
   * @throws SQLException of SQLSTATE {@value #INVALID_TERMINATION} if the seal was gone (the caller rolls back), or
   *     whatever the commit threw
   */
  void commit() throws SQLException {
    if (!sealed) {
      tx.commit();
      return;
    }
    removeSeal(unsealSql + ";\nCOMMIT");
    tx.commit(); // nothing left to commit: the driver sends nothing
  }

  private void removeSeal(String sql) throws SQLException {
    try (PreparedStatement ps = Statements.prepare(tx, sql)) {
      ps.setObject(1, token);
      ps.execute();
    } catch (SQLException e) {
      if (INVALID_TERMINATION.equals(e.getSQLState())) {
        throw ended(e);
      }
      throw e;
    }
    sealed = false;
  }

  /** The failure of a handler that ended the transaction it was given, found by {@code evidence} (or none). */
  SQLException ended(Throwable evidence) {
    return new SQLException("handoff: a handler of consumer group '" + group + "' ended the transaction it was"
        + " given (COMMIT or ROLLBACK run as SQL, or commit() on the connection under it), in " + running
        + " or an earlier call of the batch; nothing of that transaction was committed", INVALID_TERMINATION,
        evidence);
  }

  /** Releases a savepoint handoff set around a handler; gone only if the handler ended the transaction. */
  void release(Savepoint sp) throws SQLException {
    try {
      tx.releaseSavepoint(sp);
    } catch (SQLException e) {
      throw "3B001".equals(e.getSQLState()) ? ended(e) : e;
    }
  }

  /** Rolls back to a savepoint handoff set around a handler; gone only if the handler ended the transaction. */
  void rollbackTo(Savepoint sp) throws SQLException {
    try {
      tx.rollback(sp);
    } catch (SQLException e) {
      throw "3B001".equals(e.getSQLState()) ? ended(e) : e;
    }
  }

  /** Whether {@code e} (or a cause) says a handler tried to end, or ended, the transaction it was given. */
  static boolean endedBy(Throwable e) {
    return Jdbc.hasState(e, INVALID_TERMINATION);
  }

  /** A handler call, given the guarded connection. */
  @FunctionalInterface
  interface HandlerCall {
    void run(Connection tx) throws Exception;
  }

  private Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    String name = method.getName();
    switch (name) {
      case "commit", "close", "abort" -> throw refuse(name + "()");
      case "rollback" -> {
        if (args == null || args.length == 0) {
          throw refuse("rollback()");
        }
      }
      case "setAutoCommit" -> {
        if ((Boolean) args[0]) {
          throw refuse("setAutoCommit(true)");
        }
        return null; // it is off already: the transaction is open
      }
      case "unwrap" -> {
        if (((Class<?>) args[0]).isInstance(proxy)) {
          return proxy;
        }
      }
      case "isWrapperFor" -> {
        if (((Class<?>) args[0]).isInstance(proxy)) {
          return true;
        }
      }
      case "equals" -> {
        return proxy == args[0];
      }
      case "hashCode" -> {
        return System.identityHashCode(proxy);
      }
      case "toString" -> {
        return "handler connection of consumer group '" + group + "' (" + tx + ")";
      }
      default -> {
        // passed on below
      }
    }
    try {
      return method.invoke(tx, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private SQLException refuse(String call) {
    SQLException e = new SQLException("handoff: a handler must not call " + call + " on the transaction it was"
        + " given (consumer group '" + group + "', " + running + "): handoff commits the inbox marker and the"
        + " handler's writes together once the handler returns", INVALID_TERMINATION);
    if (refusal == null) {
      refusal = e;
    }
    return e;
  }
}
