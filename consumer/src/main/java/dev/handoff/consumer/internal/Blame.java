package dev.handoff.consumer.internal;

import dev.handoff.consumer.RetryLaterException;
import java.sql.SQLException;
import java.util.List;
import java.util.Set;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisBroadcastException;
import redis.clients.jedis.exceptions.JedisClusterException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisRedirectionException;

/**
 * Whose fault a failure in a batch's transaction is. Only the message's own faults count as deliveries and can end
 * in a dead letter; the environment's are waited out, and conflicts between transactions are simply run again.
 */
enum Blame {
  /** The handler threw for this message, or its data broke a constraint: a failed delivery. */
  MESSAGE,
  /**
   * The environment failed: the connection (SQLSTATE class 08), a privilege (42501), a table, column or function
   * (42P01, 42703, 42883: a schema not migrated as far as this version needs), resources (class 53), an
   * administrator's shutdown (57P01-57P03), a read-only server (25006), a Redis connection or permission, a Redis
   * Cluster in motion ({@code TRYAGAIN} while a slot migrates, {@code CLUSTERDOWN}, {@code MOVED}/{@code ASK} left
   * unfollowed or past the client's attempts, a node {@code LOADING} or whose {@code MASTERDOWN}), or a handler's
   * {@link RetryLaterException}. No delivery is counted.
   */
  ENVIRONMENT,
  /** A serialization failure or deadlock (40001, 40P01): retried at once, no delivery counted. */
  CONFLICT;

  /** A table, column or function that does not exist: most often a schema not migrated as far as this version. */
  private static final Set<String> MISSING_OBJECT_STATES = Set.of("42P01", "42703", "42883");
  private static final Set<String> ENVIRONMENT_STATES = Set.of("42501", "57P01", "57P02", "57P03", "25006");
  private static final Set<String> CONFLICT_STATES = Set.of("40001", "40P01");
  /**
   * Error replies of a cluster being resharded or failing over: they say where the data is now, never what is wrong
   * with a message, and the same call succeeds once the slot settles. Jedis follows MOVED and ASK itself but passes
   * these on after one attempt.
   */
  private static final List<String> CLUSTER_IN_MOTION = List.of("TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN");

  /** Whether {@code failure} or a cause says a table, column or function does not exist (42P01, 42703, 42883). */
  static boolean missingObject(Throwable failure) {
    return Jdbc.hasState(failure, MISSING_OBJECT_STATES);
  }

  /** The blame for {@code failure}, read from it and its causes; the first that decides, decides. */
  static Blame of(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      Blame b = own(t);
      if (b != null) {
        return b;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return MESSAGE;
  }

  private static Blame own(Throwable t) {
    if (t instanceof RetryLaterException) {
      return ENVIRONMENT;
    }
    if (t instanceof SQLException s && s.getSQLState() != null) {
      String state = s.getSQLState();
      if (CONFLICT_STATES.contains(state)) {
        return CONFLICT;
      }
      if (state.startsWith("08") || state.startsWith("53") || ENVIRONMENT_STATES.contains(state)
          || MISSING_OBJECT_STATES.contains(state)) {
        return ENVIRONMENT;
      }
      return null;
    }
    if (t instanceof JedisClusterOperationException && t.getMessage() != null
        && t.getMessage().contains("multiple hash slots")) {
      return null; // keys of several slots in one call: the caller's mistake, refused the same way every time
    }
    if (t instanceof JedisConnectionException || t instanceof JedisAccessControlException
        || t instanceof JedisClusterOperationException || t instanceof JedisClusterException
        || t instanceof JedisRedirectionException) {
      return ENVIRONMENT;
    }
    if (t instanceof JedisBroadcastException b) {
      // A command split over several nodes: any node's environment failure is the whole call's.
      for (Object reply : b.getReplies().values()) {
        if (reply instanceof Throwable nodeFailure && of(nodeFailure) == ENVIRONMENT) {
          return ENVIRONMENT;
        }
      }
      return null;
    }
    if (t instanceof JedisDataException && t.getMessage() != null
        && (t.getMessage().startsWith("NOPERM") || t.getMessage().contains("can't run this command")
        || inMotion(t.getMessage()))) {
      return ENVIRONMENT;
    }
    return null;
  }

  private static boolean inMotion(String message) {
    for (String prefix : CLUSTER_IN_MOTION) {
      if (message.startsWith(prefix)) {
        return true;
      }
    }
    return false;
  }
}
