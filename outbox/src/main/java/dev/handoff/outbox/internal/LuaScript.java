package dev.handoff.outbox.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The one way handoff runs its Lua scripts, in the relay and in the consumers: by SHA ({@code EVALSHA}), sending the
 * whole script ({@code EVAL}, which also caches it) only when Redis answers {@code NOSCRIPT}, after a restart or a
 * {@code SCRIPT FLUSH}. A batch then costs the script's SHA, not its text. Immutable and thread-safe.
 */
public final class LuaScript {

  private final byte[] source;
  private final byte[] sha;
  private final String sourceText;
  private final String shaText;

  private LuaScript(String source) {
    this.sourceText = source;
    this.source = source.getBytes(StandardCharsets.UTF_8);
    try {
      this.shaText = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(this.source));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JVM has no SHA-1, which Redis names scripts by", e);
    }
    this.sha = shaText.getBytes(StandardCharsets.US_ASCII);
  }

  /** A script given as text. */
  public static LuaScript of(String source) {
    return new LuaScript(source);
  }

  /** A script from a class path resource, for example {@code /dev/handoff/outbox/publish.lua}. */
  public static LuaScript resource(String path) {
    return new LuaScript(resourceText(path));
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

  /** Runs the script on binary keys and arguments; bulk replies come back as {@code byte[]}. */
  public Object run(UnifiedJedis redis, List<byte[]> keys, List<byte[]> args) {
    try {
      return redis.evalsha(sha, keys, args);
    } catch (JedisNoScriptException e) {
      return redis.eval(source, keys, args);
    }
  }

  /** Runs the script on text keys and arguments; bulk replies come back as {@code String}. */
  public Object runText(UnifiedJedis redis, List<String> keys, List<String> args) {
    try {
      return redis.evalsha(shaText, keys, args);
    } catch (JedisNoScriptException e) {
      return redis.eval(sourceText, keys, args);
    }
  }
}
