package dev.handoff.spring.autoconfigure;

import dev.handoff.spring.HandoffStartupException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * What handoff needs of the libraries Spring Boot's dependency management chooses. Boot 4.0 manages Jedis 7.0 and
 * Boot 3.5 Jedis 6.0, and neither has the clients and client settings handoff calls ({@code RedisClient},
 * {@code RedisClusterClient}, {@code DefaultJedisClientConfig.Builder.resp2()}): an application on either line sets
 * the {@code jedis.version} property. This check says so in one line before any of those classes is loaded.
 */
final class Classpath {

  private static final String BUILT = "dev/handoff/spring/autoconfigure/build.properties";

  private Classpath() {}

  /** The Jedis version handoff was built and tested against, such as {@code 8.0.2}. */
  static String builtJedisVersion() {
    Properties p = new Properties();
    try (InputStream in = Classpath.class.getClassLoader().getResourceAsStream(BUILT)) {
      if (in == null) {
        throw new IllegalStateException(BUILT + " is missing from handoff's jar");
      }
      p.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return p.getProperty("jedis.version");
  }

  /**
   * Fails unless the class path's Jedis has what handoff calls.
   *
   * @throws HandoffStartupException naming the version found and the Maven and Gradle property to set
   */
  static void requireJedis(ClassLoader loader) {
    String found = jedisVersion(loader);
    if (!jedisUsable(loader)) {
      String wanted = builtJedisVersion();
      throw new HandoffStartupException("handoff needs Jedis 8.0 or later, and the class path has Jedis " + found
          + " (Spring Boot's dependency management chooses it): set the Maven property <jedis.version>" + wanted
          + "</jedis.version>, or in Gradle ext['jedis.version'] = '" + wanted + "'");
    }
  }

  static boolean jedisUsable(ClassLoader loader) {
    try {
      Class.forName("redis.clients.jedis.RedisClient", false, loader);
      Class.forName("redis.clients.jedis.RedisClusterClient", false, loader);
      Class<?> builder = Class.forName("redis.clients.jedis.DefaultJedisClientConfig$Builder", false, loader);
      builder.getMethod("resp2");
      return true;
    } catch (ClassNotFoundException | NoSuchMethodException | LinkageError e) {
      return false;
    }
  }

  /** The version in Jedis's jar, or "unknown" (a class path without its Maven metadata). */
  static String jedisVersion(ClassLoader loader) {
    try (InputStream in = loader.getResourceAsStream("META-INF/maven/redis.clients/jedis/pom.properties")) {
      if (in != null) {
        Properties p = new Properties();
        p.load(in);
        return p.getProperty("version", "unknown");
      }
    } catch (IOException e) {
      // reported as unknown
    }
    return "unknown";
  }
}
