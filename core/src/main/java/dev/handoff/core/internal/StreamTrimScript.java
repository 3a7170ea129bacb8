package dev.handoff.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import redis.clients.jedis.UnifiedJedis;

/**
 * The one computation of a stream's trim point, shared by the relay's maintenance and the operator's trim
 * ({@code StreamAdmin} in the consumer module): the lowest of every group's last-delivered ID and oldest pending
 * ID, read and applied in one atomic script so that no group moves in between. Kept in one place so that an
 * operator's trim can never remove what the relay would keep.
 *
 * <p>Thread-safe: it keeps no state.
 */
public final class StreamTrimScript {

  /** How the script trims below the trim point. */
  public enum Mode {
    /** Whole stream nodes only, at most {@code limit} entries per call: what the relay does. */
    APPROX,
    /** Every entry below the trim point; run after {@link #APPROX} calls, when what is left is within one node. */
    EXACT,
    /** Nothing: computes and reports the trim point only. */
    NONE
  }

  /**
   * One call's outcome: {@code minId} the trim point ("" when the stream does not exist), {@code evicted} the
   * entries removed, {@code groups} the stream's number of groups, {@code holder} the group whose unfinished entries
   * set the trim point ("" with no group), {@code length} the stream's length after the call.
   */
  public record Result(String minId, long evicted, long groups, String holder, long length) {}

  /** The most entries one call removes unless its caller says otherwise. */
  public static final int DEFAULT_LIMIT = 10_000;

  private static final LuaScript TRIM = LuaScript.resource("/dev/handoff/core/trim.lua");

  private StreamTrimScript() {}

  /** The script, for ACL checks. */
  public static LuaScript script() {
    return TRIM;
  }

  /**
   * Computes the trim point of {@code streamKey} and trims below it as {@code mode} says.
   *
   * @param noGroupFloor the trim point of a stream without groups (the relay's outbox retention cut; zero keeps all)
   */
  public static Result run(UnifiedJedis redis, String streamKey, StreamId noGroupFloor, int limit, Mode mode) {
    return run(redis, streamKey, noGroupFloor, null, limit, mode);
  }

  /**
   * As {@link #run(UnifiedJedis, String, StreamId, int, Mode)}, never trimming at or above {@code keepFrom} (the
   * relay's trim margin; null for none).
   */
  public static Result run(UnifiedJedis redis, String streamKey, StreamId noGroupFloor, StreamId keepFrom,
      int limit, Mode mode) {
    List<?> reply = (List<?>) TRIM.runRetryingBrokenConnections(redis, List.of(bytes(streamKey)),
        List.of(bytes(noGroupFloor.toString()), bytes(Integer.toString(limit)),
            bytes(mode.name().toLowerCase(Locale.ROOT)), bytes(keepFrom == null ? "" : keepFrom.toString())));
    return new Result(new String((byte[]) reply.get(0), StandardCharsets.UTF_8), (Long) reply.get(1),
        (Long) reply.get(2), new String((byte[]) reply.get(3), StandardCharsets.UTF_8), (Long) reply.get(4));
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
