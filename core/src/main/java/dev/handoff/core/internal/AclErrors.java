package dev.handoff.core.internal;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Turns a refusal by the Redis server's ACL into an error that names what was refused and the permission the user
 * lacks. Redis names the command when it refuses one sent directly ({@code NOPERM this user has no permissions to
 * run the 'xack' command}), but not when it refuses one a script calls: Redis 7.0 says {@code ERR The user executing
 * the script can't run this command or subcommand script: <sha>, on @user_script:<line>.} The script knows its
 * commands line by line ({@link LuaScript}), so the line names the command; without a line (a refusal caught by
 * {@code redis.pcall} and returned) the error lists every command the script calls.
 *
 * <p>The result is a {@link JedisAccessControlException}, so whoever treats Redis failures alike (retry after a
 * pause) still does; the original error is its cause. Thread-safe: static functions only.
 */
public final class AclErrors {

  private static final Pattern SCRIPT_LINE = Pattern.compile("@user_script:(\\d+)");
  private static final Pattern REFUSED_COMMAND = Pattern.compile("permissions to run the '([^']+)' command");
  private static final String SCRIPT_COMMAND_REFUSED = "The user executing the script can't run this command";
  private static final String SCRIPT_KEY_REFUSED = "The user executing the script can't access";
  private static final String KEY_REFUSED = "no permissions to access one of the keys";

  private AclErrors() {}

  /** Whether {@code e} is a refusal by the server's ACL (of a command, a subcommand or a key). */
  public static boolean isRefusal(JedisDataException e) {
    String m = e.getMessage();
    return m != null
        && (m.startsWith("NOPERM") || m.contains(SCRIPT_COMMAND_REFUSED) || m.contains(SCRIPT_KEY_REFUSED));
  }

  /** The ACL permission for a command, {@code +xinfo|groups} for {@code XINFO|GROUPS}. */
  public static String permission(String command) {
    return "+" + command.toLowerCase(Locale.ROOT);
  }

  /**
   * {@code e} as thrown by running {@code script} on {@code keys}: explained if it is an ACL refusal, else as is.
   */
  static JedisDataException inScript(JedisDataException e, LuaScript script, List<String> keys) {
    if (!isRefusal(e)) {
      return e;
    }
    String m = e.getMessage();
    String calls = "; the script calls " + String.join(", ", script.commands());
    Set<String> onLine = Set.of();
    int at = 0;
    Matcher line = SCRIPT_LINE.matcher(m);
    if (line.find()) {
      at = Integer.parseInt(line.group(1));
      onLine = script.commandsOnLine(at);
    }
    Matcher direct = REFUSED_COMMAND.matcher(m);
    String text;
    if (direct.find()) {
      // EVALSHA or EVAL itself, refused before the script ran.
      String command = direct.group(1).toUpperCase(Locale.ROOT);
      text = "Redis ACL refused " + command + ", which runs " + script + " on keys " + keys + ": the Redis user needs"
          + " +evalsha +eval (handoff runs its scripts by SHA and sends one whole when Redis does not know it)" + calls;
    } else if (m.contains(SCRIPT_KEY_REFUSED) || m.contains(KEY_REFUSED)) {
      text = (onLine.isEmpty() ? "Redis ACL refused " + script + " access to its keys " + keys
              : "Redis ACL refused the command " + commandList(onLine) + where(script, at) + " access to a key beside "
                  + keys)
          + ": the Redis user's key patterns must cover them (RedisAcl: ~<keyPrefix>:{*)" + calls;
    } else if (!onLine.isEmpty()) {
      text = "Redis ACL refused the command " + commandList(onLine) + where(script, at) + " on keys " + keys
          + ": the Redis user needs " + permissions(onLine).replace(" ", " or ") + calls;
    } else {
      text = "Redis ACL refused one of the commands of " + script + " on keys " + keys + ": it calls "
          + String.join(", ", script.commands()) + ", so the Redis user needs " + permissions(script.commands());
    }
    return new JedisAccessControlException(text + " (see RedisAcl)", e);
  }

  /**
   * {@code e} as thrown by {@code command} (for example {@code XACK}) sent directly on {@code keys}: explained if it
   * is an ACL refusal, else as is.
   */
  public static JedisDataException direct(JedisDataException e, String command, List<String> keys) {
    if (!isRefusal(e)) {
      return e;
    }
    Matcher named = REFUSED_COMMAND.matcher(e.getMessage());
    String refused = named.find() ? named.group(1).toUpperCase(Locale.ROOT) : command;
    String text = e.getMessage().contains(KEY_REFUSED)
        ? "Redis ACL refused " + command + " access to " + keys + ": the Redis user's key patterns must cover them"
            + " (RedisAcl: ~<keyPrefix>:{*)"
        : "Redis ACL refused " + refused + " on " + keys + ": the Redis user needs " + permission(refused);
    return new JedisAccessControlException(text + " (see RedisAcl)", e);
  }

  /** Runs {@code command}, sent directly on {@code keys}, an ACL refusal explained as {@link #direct} does. */
  public static <T> T call(String command, List<String> keys, Supplier<T> call) {
    try {
      return call.get();
    } catch (JedisDataException e) {
      throw direct(e, command, keys);
    }
  }

  /** " (line 9 of script 'publish')", or " in script 'publish'" when Redis named no line. */
  private static String where(LuaScript script, int line) {
    return line <= 0 ? " in " + script : " (line " + line + " of " + script + ")";
  }

  private static String commandList(Set<String> commands) {
    return String.join(" or ", commands);
  }

  private static String permissions(Set<String> commands) {
    return new TreeSet<>(commands).stream().map(AclErrors::permission).collect(Collectors.joining(" "));
  }
}
