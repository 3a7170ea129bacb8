package dev.handoff.core;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Optional;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;

/**
 * A Redis server and login given as a URL, the one parser behind every {@code URI} or URL handoff accepts for
 * Redis (the consumers' builders, the command-line tools).
 *
 * <p>Accepted forms: {@code redis://[[user]:password@]host[:port][/db]}, {@code redis://password@host...} (a
 * password alone, as {@code redis-cli -u} reads it), and the same with {@code rediss://} for TLS. User and password
 * are percent-decoded ({@code %40} is {@code @}, {@code %25} is {@code %}); a {@code +} stays a {@code +}. An IPv6
 * host goes in brackets. Defaults: port {@value #DEFAULT_PORT}, database 0, no user (Redis's {@code default} user),
 * no password. A query or fragment is refused rather than ignored: other clients read options there, which handoff
 * would silently drop.
 *
 * <p>With {@code rediss://} the connection verifies the server's certificate against the JVM's default truststore
 * and its host name against the certificate; a CA file, a client certificate or timeouts of one's own are a
 * {@link RedisConnectionSpec}.
 *
 * <p>Errors are {@link IllegalArgumentException}s with a one-line message that names what is wrong and never
 * contains the password. {@link #toString()} shows the URL with the password as {@code ***}.
 *
 * <p>Immutable and thread-safe.
 */
public final class RedisUrl {

  /** The port of a URL that names none. */
  public static final int DEFAULT_PORT = 6379;

  private static final String FORM = "redis://[[user]:password@]host[:port][/db] (rediss:// for TLS)";

  private final boolean tls;
  private final String host;
  private final int port;
  private final String user;
  private final String password;
  private final int database;

  private RedisUrl(boolean tls, String host, int port, String user, String password, int database) {
    this.tls = tls;
    this.host = host;
    this.port = port;
    this.user = user;
    this.password = password;
    this.database = database;
  }

  /**
   * Parses {@code url}; see the class comment for the accepted forms.
   *
   * @throws IllegalArgumentException if it is not such a URL; the message names what is wrong, without the password
   */
  public static RedisUrl parse(String url) {
    Objects.requireNonNull(url, "url");
    try {
      return parse(new URI(url));
    } catch (URISyntaxException e) {
      // The exception's own message quotes the input, password included: only its reason and index are shown.
      throw new IllegalArgumentException("the Redis URL is not a URL: " + e.getReason() + " at index " + e.getIndex());
    }
  }

  /**
   * Parses {@code uri}; see the class comment for the accepted forms.
   *
   * @throws IllegalArgumentException if it is not such a URL; the message names what is wrong, without the password
   */
  public static RedisUrl parse(URI uri) {
    Objects.requireNonNull(uri, "uri");
    // The authority is split here rather than by URI, which gives up on a host it cannot parse and then reports
    // no host at all; its raw form keeps the percent escapes of user and password for decode() below.
    String authority = uri.getRawAuthority();
    String scheme = uri.getScheme();
    if (scheme == null || !(scheme.equalsIgnoreCase("redis") || scheme.equalsIgnoreCase("rediss"))) {
      throw new IllegalArgumentException("the Redis URL must look like " + FORM + ", was '" + masked(uri)
          + "': the scheme must be redis or rediss");
    }
    if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
      throw new IllegalArgumentException("the Redis URL must look like " + FORM
          + ": it takes no query (?...) or fragment (#...)");
    }
    if (authority == null) {
      throw new IllegalArgumentException("the Redis URL has no host: '" + masked(uri) + "'");
    }
    int at = authority.lastIndexOf('@');
    String user = null;
    String password = null;
    if (at >= 0) {
      String userInfo = authority.substring(0, at);
      int colon = userInfo.indexOf(':');
      if (colon >= 0) {
        user = emptyToNull(decode(userInfo.substring(0, colon), "user"));
        password = emptyToNull(decode(userInfo.substring(colon + 1), "password"));
      } else {
        password = emptyToNull(decode(userInfo, "password"));
      }
    }
    String hostAndPort = authority.substring(at + 1);
    String host;
    String portText;
    if (hostAndPort.startsWith("[")) {
      int close = hostAndPort.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("the Redis URL's IPv6 host has no closing ']': '" + masked(uri) + "'");
      }
      host = hostAndPort.substring(1, close);
      String rest = hostAndPort.substring(close + 1);
      if (!rest.isEmpty() && !rest.startsWith(":")) {
        throw new IllegalArgumentException("the Redis URL has text after its IPv6 host: '" + masked(uri) + "'");
      }
      portText = rest.isEmpty() ? "" : rest.substring(1);
    } else {
      int colon = hostAndPort.lastIndexOf(':');
      host = colon < 0 ? hostAndPort : hostAndPort.substring(0, colon);
      portText = colon < 0 ? "" : hostAndPort.substring(colon + 1);
    }
    if (host.isEmpty()) {
      throw new IllegalArgumentException("the Redis URL has no host: '" + masked(uri) + "'");
    }
    if (!hostAndPort.startsWith("[") && host.indexOf(':') >= 0) {
      throw new IllegalArgumentException("the Redis URL's host has a ':' (an IPv6 address goes in brackets): '"
          + masked(uri) + "'");
    }
    return new RedisUrl(scheme.equalsIgnoreCase("rediss"), host, port(portText), user, password,
        database(uri.getRawPath()));
  }

  /** Whether the connection uses TLS ({@code rediss://}). */
  public boolean tls() {
    return tls;
  }

  /** The host name or address, an IPv6 address without its brackets. */
  public String host() {
    return host;
  }

  /** The port; {@value #DEFAULT_PORT} if the URL names none. */
  public int port() {
    return port;
  }

  /** The ACL user, if the URL names one; without one Redis logs the password in as its {@code default} user. */
  public Optional<String> user() {
    return Optional.ofNullable(user);
  }

  /** Whether the URL has a password (it is only ever handed to Jedis, in {@link #clientConfig()}). */
  public boolean hasPassword() {
    return password != null;
  }

  /** The database number; 0 if the URL names none. */
  public int database() {
    return database;
  }

  /** The server, for Jedis. */
  public HostAndPort hostAndPort() {
    return new HostAndPort(host, port);
  }

  /**
   * User, password, database and TLS for Jedis, everything else at Jedis's defaults (2 s timeouts); use it as the
   * base of {@link DefaultJedisClientConfig.Builder#from(JedisClientConfig)} to change those.
   */
  // Jedis 8 deprecates ssl(boolean) for SslOptions, but with nothing else set ssl(true) is exactly "the JVM's
  // truststore and host-name checking", which is what rediss:// promises; a CA file of one's own is SslOptions' job.
  @SuppressWarnings("deprecation")
  public JedisClientConfig clientConfig() {
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder().database(database).ssl(tls);
    if (user != null) {
      config.user(user);
    }
    if (password != null) {
      config.password(password);
    }
    return config.build();
  }

  /** The URL in full form, {@code redis[s]://[user][:***@]host:port/db}: the password, if any, is {@code ***}. */
  @Override
  public String toString() {
    String login = password != null ? (user != null ? user : "") + ":***@" : user != null ? user + "@" : "";
    String server = host.indexOf(':') >= 0 ? "[" + host + "]" : host;
    return (tls ? "rediss" : "redis") + "://" + login + server + ":" + port + "/" + database;
  }

  private static int port(String text) {
    if (text.isEmpty()) {
      return DEFAULT_PORT;
    }
    // At most 5 digits: longer numbers would overflow parseInt and are out of range anyway.
    int port = text.matches("[0-9]{1,5}") ? Integer.parseInt(text) : -1;
    if (port < 1 || port > 65_535) {
      throw new IllegalArgumentException("the Redis URL's port must be a number from 1 to 65535, was '" + text
          + "'");
    }
    return port;
  }

  private static int database(String path) {
    if (path == null || path.isEmpty() || path.equals("/")) {
      return 0;
    }
    String db = path.substring(1);
    if (!db.matches("[0-9]{1,9}")) {
      throw new IllegalArgumentException("the Redis URL's database must be a number, was '" + db + "'");
    }
    return Integer.parseInt(db);
  }

  /**
   * Percent-decodes {@code s} as UTF-8. Not {@code URLDecoder}: that decodes HTML forms, where {@code +} is a space,
   * and a password with a {@code +} would stop working.
   */
  private static String decode(String s, String what) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    StringBuilder out = new StringBuilder(s.length());
    ByteArrayOutputStream escaped = new ByteArrayOutputStream();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '%') {
        out.append(c);
        continue;
      }
      int hi = i + 2 < s.length() ? Character.digit(s.charAt(i + 1), 16) : -1;
      int lo = hi >= 0 ? Character.digit(s.charAt(i + 2), 16) : -1;
      if (lo < 0) {
        throw new IllegalArgumentException("the Redis URL's " + what + " has a '%' not followed by two hex digits");
      }
      // A run of escapes is one UTF-8 sequence: decode it as a whole.
      escaped.write(hi * 16 + lo);
      i += 2;
      if (i + 1 >= s.length() || s.charAt(i + 1) != '%') {
        out.append(escaped.toString(StandardCharsets.UTF_8));
        escaped.reset();
      }
    }
    return out.toString();
  }

  private static String emptyToNull(String s) {
    return s.isEmpty() ? null : s;
  }

  /** {@code uri} without its password, for an error message: the whole login is masked when it cannot be split. */
  private static String masked(URI uri) {
    String authority = uri.getRawAuthority();
    if (authority == null) {
      String path = Objects.toString(uri.getRawPath(), "");
      if (uri.isOpaque()) {
        // Such as "cache:secret@host": no authority to find a password in, so only the scheme is shown.
        return uri.getScheme() + ":...";
      }
      return uri.getScheme() == null ? path : uri.getScheme() + "://" + path;
    }
    int at = authority.lastIndexOf('@');
    if (at >= 0) {
      String userInfo = authority.substring(0, at);
      int colon = userInfo.indexOf(':');
      authority = (colon >= 0 ? userInfo.substring(0, colon) + ":***" : "***") + authority.substring(at);
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme() + ":";
    return scheme + "//" + authority + Objects.toString(uri.getRawPath(), "");
  }
}
