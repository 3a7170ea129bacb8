package dev.handoff.core.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The one way handoff runs its Lua scripts, in the relay and in the consumers: by SHA ({@code EVALSHA}), sending the
 * whole script ({@code EVAL}, which also caches it) only when Redis answers {@code NOSCRIPT}, after a restart or a
 * {@code SCRIPT FLUSH}. A batch then costs the script's SHA, not its text.
 *
 * <p>Each script has a name and knows the Redis commands it calls (read from its text), so that a refusal by the
 * server's ACL is reported by name, command and missing permission ({@link AclErrors}) rather than by the script's
 * SHA, which is all Redis 7.0 says. Immutable and thread-safe.
 */
public final class LuaScript {

  /** How many times a script meets a broken pooled connection before its error is the caller's. */
  public static final int CONNECTION_ATTEMPTS = 4;

  /** {@code redis.call('XINFO', 'GROUPS', ...)}: the command and, for a container command, its subcommand. */
  private static final Pattern CALL =
      Pattern.compile("redis\\.p?call\\(\\s*'([A-Za-z]+)'(?:\\s*,\\s*'([A-Za-z]+)')?");
  /** Commands whose ACL permission is per subcommand ({@code +xinfo|groups}). */
  private static final Set<String> CONTAINERS = Set.of("XINFO", "XGROUP", "CLIENT", "SCRIPT", "OBJECT");

  private final String name;
  private final byte[] source;
  private final byte[] sha;
  private final String sourceText;
  private final String shaText;
  private final List<Set<String>> commandsByLine;
  private final Set<String> commands;

  private LuaScript(String name, String source) {
    this.name = name;
    this.sourceText = source;
    this.source = source.getBytes(StandardCharsets.UTF_8);
    try {
      this.shaText = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(this.source));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JVM has no SHA-1, which Redis names scripts by", e);
    }
    this.sha = shaText.getBytes(StandardCharsets.US_ASCII);
    List<Set<String>> byLine = new ArrayList<>();
    Set<String> all = new TreeSet<>();
    for (String line : source.split("\n", -1)) {
      Set<String> onLine = new TreeSet<>();
      Matcher m = CALL.matcher(line);
      while (m.find()) {
        String command = m.group(1).toUpperCase(Locale.ROOT);
        if (CONTAINERS.contains(command) && m.group(2) != null) {
          command = command + "|" + m.group(2).toUpperCase(Locale.ROOT);
        }
        onLine.add(command);
      }
      byLine.add(Set.copyOf(onLine));
      all.addAll(onLine);
    }
    this.commandsByLine = List.copyOf(byLine);
    this.commands = Collections.unmodifiableSet(all);
  }

  /** A script given as text, named {@code name} in errors. */
  public static LuaScript of(String name, String source) {
    return new LuaScript(name, source);
  }

  /** A script from a class path resource, for example {@code /dev/handoff/relay/publish.lua}, named by its file. */
  public static LuaScript resource(String path) {
    return new LuaScript(nameOf(path), resourceText(path));
  }

  /** {@code publish} for {@code /dev/handoff/relay/publish.lua}. */
  static String nameOf(String path) {
    String file = path.substring(path.lastIndexOf('/') + 1);
    return file.endsWith(".lua") ? file.substring(0, file.length() - 4) : file;
  }

  /** The text of a class path resource. */
  static String resourceText(String path) {
    try (InputStream in = LuaScript.class.getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("missing script resource " + path);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read script resource " + path, e);
    }
  }

  /** The name errors give the script. */
  public String name() {
    return name;
  }

  /**
   * The Redis commands the script calls, upper case, sorted; a container command with its subcommand
   * ({@code XINFO|GROUPS}).
   */
  public Set<String> commands() {
    return commands;
  }

  /** The commands called on line {@code line} (1-based, as Redis numbers them), or none. */
  Set<String> commandsOnLine(int line) {
    return line >= 1 && line <= commandsByLine.size() ? commandsByLine.get(line - 1) : Set.of();
  }

  /**
   * Runs the script on binary keys and arguments; bulk replies come back as {@code byte[]}.
   *
   * @throws redis.clients.jedis.exceptions.JedisAccessControlException when the server's ACL refused the script, a
   *     command it calls or a key, naming them and the missing permission
   */
  public Object run(UnifiedJedis redis, List<byte[]> keys, List<byte[]> args) {
    try {
      try {
        return redis.evalsha(sha, keys, args);
      } catch (JedisNoScriptException e) {
        return redis.eval(source, keys, args);
      }
    } catch (JedisDataException e) {
      throw AclErrors.inScript(e, this, keys.stream().map(k -> new String(k, StandardCharsets.UTF_8)).toList());
    }
  }

  /**
   * As {@link #run}, for scripts that are safe to run again: pooled connections broken by a Redis restart fail once
   * each and are discarded, so a connection error is retried up to {@link #CONNECTION_ATTEMPTS} attempts in all.
   */
  public Object runRetryingBrokenConnections(UnifiedJedis redis, List<byte[]> keys, List<byte[]> args) {
    for (int attempt = 1; ; attempt++) {
      try {
        return run(redis, keys, args);
      } catch (JedisConnectionException e) {
        if (attempt == CONNECTION_ATTEMPTS) {
          throw e;
        }
      }
    }
  }

  /**
   * Queues the script by SHA on a pipeline. Its reply is an error when Redis does not have the script cached
   * ({@code NOSCRIPT}) or refused it; the caller then runs it with {@link #run}, which loads it and names a refusal.
   */
  public Response<Object> queue(AbstractPipeline pipeline, List<byte[]> keys, List<byte[]> args) {
    return pipeline.evalsha(sha, keys, args);
  }

  /** Runs the script on text keys and arguments; bulk replies come back as {@code String}. Errors as {@link #run}. */
  public Object runText(UnifiedJedis redis, List<String> keys, List<String> args) {
    try {
      try {
        return redis.evalsha(shaText, keys, args);
      } catch (JedisNoScriptException e) {
        return redis.eval(sourceText, keys, args);
      }
    } catch (JedisDataException e) {
      throw AclErrors.inScript(e, this, keys);
    }
  }

  @Override
  public String toString() {
    return "script '" + name + "'";
  }
}
