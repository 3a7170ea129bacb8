package dev.handoff.core;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The least-privilege Redis ACL rule of each handoff component: the commands it sends (directly and from its Lua
 * scripts) and the one key pattern every handoff key matches, <code>~&lt;keyPrefix&gt;:&#123;*</code> (each key is
 * <code>&lt;keyPrefix&gt;:&#123;&lt;topic&gt;:&lt;shard&gt;&#125;...</code>, see {@link StreamFormat#streamKey}). Each
 * method returns the rule as the tokens of {@code ACL SETUSER} after the user's name, {@code on} and password,
 * separated by single spaces:
 *
 * <pre>
 * ACL SETUSER relay on &gt;secret resetkeys ~handoff:&#123;* resetchannels -&#64;all +eval +evalsha ...
 * </pre>
 *
 * <p>What each rule grants, and why:
 * <ul>
 *   <li>every component: {@code +evalsha +eval} (scripts run by SHA, sent whole once when Redis does not know them;
 *       a script runs with the caller's permissions, so {@code +eval} grants no command the rule does not) and
 *       {@code +ping} (Jedis's pool checks idle connections with it);</li>
 *   <li>every component also {@code +cluster|slots}: on a Redis Cluster, Jedis's cluster client reads the slot map with
 *       it when it connects and after a MOVED, and cannot start without it (probed with Jedis 8.0.2: a user lacking
 *       it gets "Could not initialize cluster slots cache"); on a single server it only reads topology, and Redis
 *       answers it with an error;</li>
 *   <li>every component also {@code +client|setname}: the pools handoff opens name their connections
 *       ({@code handoff-relay}, {@code handoff-admin}, {@code handoff-repair}, {@code handoff} for the command
 *       line's checks);</li>
 *   <li>no Pub/Sub channel, no other key, no administrative command. A Redis database other than 0 needs
 *       {@code +select} as well.</li>
 * </ul>
 *
 * <p>A refusal is reported by the component with the refused command and the permission it lacks, also for a
 * command a script calls (Redis itself names only the script's SHA there). Thread-safe: static functions only.
 */
public final class RedisAcl {

  private static final Set<String> EVERYONE = Set.of("PING", "EVALSHA", "EVAL", "CLUSTER|SLOTS");

  /**
   * The relay on streams: publish.lua, trim.lua, {@code XINFO STREAM} when it takes a lease, and the repair of
   * deleted entries (gone.lua, {@code XINFO GROUPS}, {@code XPENDING}, {@code XACK} of gone pending entries), which
   * {@code handoff repair} also runs with this rule.
   */
  static final Set<String> RELAY_STREAMS = Set.of("CLIENT|SETNAME",
      "HGET", "EXISTS", "XADD", "HSET", "XRANGE",
      "XINFO|GROUPS", "XPENDING", "XTRIM", "XLEN",
      "XINFO|STREAM", "XACK");

  /** The relay on lists: list-push.lua, list-room.lua, list-watermark.lua, and {@code HMGET}, {@code LLEN}. */
  static final Set<String> RELAY_LISTS = Set.of("CLIENT|SETNAME",
      "HGET", "DEL", "LLEN", "HKEYS", "RPUSH", "HSET",
      "LRANGE",
      "HMGET");

  /**
   * The stream consumer: its group (create, read, claim, acknowledge), its scripts (renew, defer, delivery counts,
   * delete an idle consumer: {@code XPENDING}, {@code XCLAIM}, {@code XGROUP DELCONSUMER}), the replay from the
   * streams ({@code XRANGE}) and the automatic inbox purge's floor ({@code EXISTS}, {@code XRANGE},
   * {@code XINFO STREAM}).
   */
  static final Set<String> STREAM_CONSUMER = Set.of("CLIENT|SETNAME",
      "XGROUP|CREATE", "XREADGROUP", "XAUTOCLAIM", "XACK", "XRANGE",
      "XPENDING", "XCLAIM", "XGROUP|DELCONSUMER",
      "EXISTS", "XINFO|STREAM");

  /**
   * The list consumer: take ({@code LMOVE}, {@code BLMOVE}, delivery counts in {@code HGET}), acknowledge
   * ({@code LREM}, {@code HDEL}), count failures ({@code LPOS}, {@code HINCRBY}), heartbeat ({@code SET},
   * {@code HSET}, {@code TIME}), reap dead consumers ({@code HGETALL}, {@code EXISTS}, {@code LLEN}, {@code DEL}),
   * its own unfinished work after a restart ({@code LRANGE}) and the automatic inbox purge's floor ({@code HKEYS}).
   */
  static final Set<String> LIST_CONSUMER = Set.of("CLIENT|SETNAME",
      "LMOVE", "BLMOVE", "HGET",
      "LREM", "HDEL",
      "LPOS", "HINCRBY",
      "SET", "HSET", "TIME",
      "HGETALL", "EXISTS", "LLEN", "DEL",
      "LRANGE", "HKEYS");

  /**
   * The operator's reads: {@code status} of streams (type, length, ends, groups, pending, backlog) and of lists
   * (the list and processing lists in one script, the relay's hash), and the floor of {@code purgeInbox}. No command
   * that writes a key; dead letters (list, retry) live in the database and need no Redis permission.
   */
  static final Set<String> OPERATOR = Set.of("CLIENT|SETNAME",
      "EXISTS", "TYPE", "XLEN", "XRANGE", "XREVRANGE", "XINFO|GROUPS", "XINFO|STREAM", "XPENDING",
      "LLEN", "LRANGE", "HKEYS", "HGET", "HMGET");

  /**
   * The operator's rewind and trim ({@code StreamAdmin}, {@code handoff rewind} and {@code handoff trim}): the
   * reads of the rewind and trim scripts, and the two writes, {@code XGROUP SETID} and {@code XTRIM}. Without a
   * database to list a topic's shards they also need {@code +scan}, left out here: ACL key patterns do not filter
   * {@code SCAN}, which would list every key name of the server.
   */
  static final Set<String> STREAM_ADMIN = Set.of("CLIENT|SETNAME",
      "EXISTS", "XLEN", "XRANGE", "XINFO|GROUPS", "XINFO|STREAM", "XPENDING",
      "XGROUP|SETID", "XTRIM");

  private RedisAcl() {}

  /** The key pattern of every key under {@code keyPrefix}: <code>~&lt;keyPrefix&gt;:&#123;*</code>. */
  public static String keyPattern(String keyPrefix) {
    // The prefix pattern admits no glob character (* ? [ ] \), so the prefix is matched literally.
    return "~" + StreamFormat.requireValidKeyPrefix(keyPrefix) + ":{*";
  }

  /** The relay's rule on the stream transport (the default). */
  public static String relay(String keyPrefix) {
    return relay(keyPrefix, Transport.STREAM);
  }

  /** The relay's rule on {@code transport}. */
  public static String relay(String keyPrefix, Transport transport) {
    Objects.requireNonNull(transport, "transport");
    return rule(keyPrefix, transport == Transport.LIST ? RELAY_LISTS : RELAY_STREAMS);
  }

  /** A stream consumer's rule. Add {@link #operator}'s commands if the application also calls its status. */
  public static String streamConsumer(String keyPrefix) {
    return rule(keyPrefix, STREAM_CONSUMER);
  }

  /** A list consumer's rule. Add {@link #operator}'s commands if the application also calls its status. */
  public static String listConsumer(String keyPrefix) {
    return rule(keyPrefix, LIST_CONSUMER);
  }

  /**
   * The rule of the operator's commands, on both transports: status, the inbox purge, dead-letter list and retry
   * (which need only the database). Read-only. It has no {@code SCAN}, so status finds topics and shards in the
   * relay's lease rows only: Redis refuses its scan for keys whose lease rows are gone. Add {@code +scan} to see
   * those.
   */
  public static String operator(String keyPrefix) {
    return rule(keyPrefix, OPERATOR);
  }

  /**
   * The rule of rewind and trim on streams. It writes (group positions, trims): give it to the operator's rewind and
   * trim only. Add {@code +scan} to use them without a database.
   */
  public static String streamAdmin(String keyPrefix) {
    return rule(keyPrefix, STREAM_ADMIN);
  }

  /** The commands a rule grants, upper case and sorted, with subcommands as {@code XINFO|GROUPS}. */
  public static List<String> commands(String rule) {
    return List.of(rule.split(" ")).stream().filter(t -> t.startsWith("+"))
        .map(t -> t.substring(1).toUpperCase(Locale.ROOT)).sorted().toList();
  }

  private static String rule(String keyPrefix, Set<String> commands) {
    Set<String> all = new TreeSet<>(EVERYONE);
    all.addAll(commands);
    return "resetkeys " + keyPattern(keyPrefix) + " resetchannels -@all "
        + all.stream().map(c -> "+" + c.toLowerCase(Locale.ROOT)).collect(Collectors.joining(" "));
  }
}
