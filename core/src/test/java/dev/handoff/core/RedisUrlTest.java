package dev.handoff.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisCredentials;

class RedisUrlTest {

  @Test
  void hostAloneTakesTheDefaultPortAndDatabaseAndNoLogin() {
    RedisUrl url = RedisUrl.parse("redis://cache.internal");
    assertThat(url.hostAndPort()).isEqualTo(new HostAndPort("cache.internal", 6379));
    assertThat(url.port()).isEqualTo(RedisUrl.DEFAULT_PORT).isEqualTo(6379);
    assertThat(url.database()).isZero();
    assertThat(url.user()).isEmpty();
    assertThat(url.hasPassword()).isFalse();
    assertThat(url.tls()).isFalse();
    JedisClientConfig config = url.clientConfig();
    assertThat(config.getDatabase()).isZero();
    assertThat(config.isSsl()).isFalse();
    assertThat(config.getCredentialsProvider().get().getPassword()).isNull();
    assertThat(url.toString()).isEqualTo("redis://cache.internal:6379/0");
  }

  @Test
  void userPasswordPortAndDatabase() {
    RedisUrl url = RedisUrl.parse("redis://app:secret@10.0.0.5:6380/3");
    assertThat(url.hostAndPort()).isEqualTo(new HostAndPort("10.0.0.5", 6380));
    assertThat(url.user()).contains("app");
    assertThat(url.database()).isEqualTo(3);
    assertLogin(url.clientConfig(), "app", "secret");
    assertThat(url.clientConfig().getDatabase()).isEqualTo(3);
    assertThat(url.toString()).isEqualTo("redis://app:***@10.0.0.5:6380/3").doesNotContain("secret");
  }

  @Test
  void anEmptyUserBeforeTheColonIsTheDefaultUser() {
    RedisUrl url = RedisUrl.parse("redis://:secret@cache");
    assertThat(url.user()).isEmpty();
    assertLogin(url.clientConfig(), null, "secret");
    assertThat(url.toString()).isEqualTo("redis://:***@cache:6379/0");
  }

  @Test
  void aLoginWithoutAColonIsAPasswordAloneAsRedisCliReadsIt() {
    RedisUrl url = RedisUrl.parse("redis://secret@cache:7000");
    assertThat(url.user()).isEmpty();
    assertThat(url.hasPassword()).isTrue();
    assertLogin(url.clientConfig(), null, "secret");
    assertThat(url.toString()).isEqualTo("redis://:***@cache:7000/0");
  }

  @Test
  void userAndPasswordArePercentDecodedAndAPlusStaysAPlus() {
    RedisUrl url = RedisUrl.parse("redis://ops%2Bteam:p%40ss+w%25rd%C3%A9@cache");
    assertLogin(url.clientConfig(), "ops+team", "p@ss+w%rdé");
    assertLogin(RedisUrl.parse("redis://:a+b@cache").clientConfig(), null, "a+b");
    assertLogin(RedisUrl.parse("redis://pa%2Bss@cache").clientConfig(), null, "pa+ss");
    // An '@' left unescaped in the password still works: the login ends at the last '@'.
    assertLogin(RedisUrl.parse("redis://:p@ss@cache").clientConfig(), null, "p@ss");
  }

  @Test
  void redissSetsTlsAndKeepsEverythingElse() {
    RedisUrl url = RedisUrl.parse("rediss://app:secret@redis.example.com/2");
    assertThat(url.tls()).isTrue();
    JedisClientConfig config = url.clientConfig();
    assertThat(config.isSsl()).isTrue();
    // No socket factory or parameters of its own: Jedis then uses the JVM's truststore and checks the host name.
    assertThat(config.getSslSocketFactory()).isNull();
    assertThat(config.getSslParameters()).isNull();
    assertThat(config.getDatabase()).isEqualTo(2);
    assertLogin(config, "app", "secret");
    assertThat(url.hostAndPort()).isEqualTo(new HostAndPort("redis.example.com", 6379));
    assertThat(url.toString()).isEqualTo("rediss://app:***@redis.example.com:6379/2");
  }

  @Test
  void anIpv6HostGoesInBrackets() {
    RedisUrl url = RedisUrl.parse("redis://[::1]:6390");
    assertThat(url.host()).isEqualTo("::1");
    assertThat(url.hostAndPort()).isEqualTo(new HostAndPort("::1", 6390));
    assertThat(url.toString()).isEqualTo("redis://[::1]:6390/0");
  }

  @Test
  void aUriParsesAsItsStringDoes() {
    URI uri = URI.create("redis://app:p%40ss@127.0.0.1:6400/5");
    RedisUrl url = RedisUrl.parse(uri);
    assertThat(url.hostAndPort()).isEqualTo(new HostAndPort("127.0.0.1", 6400));
    assertThat(url.database()).isEqualTo(5);
    assertLogin(url.clientConfig(), "app", "p@ss");
    assertThat(RedisUrl.parse("redis://cache/").database()).isZero();
    assertThat(RedisUrl.parse("redis://cache:").port()).isEqualTo(6379);
  }

  @Test
  void badUrlsNameWhatIsWrongOnOneLineWithoutThePassword() {
    assertRefused("http://:hunter2@cache", "the Redis URL must look like redis://[[user]:password@]host[:port][/db]"
        + " (rediss:// for TLS), was 'http://:***@cache': the scheme must be redis or rediss");
    assertRefused("cache.internal:6379", "the Redis URL must look like redis://[[user]:password@]host[:port][/db]"
        + " (rediss:// for TLS), was 'cache.internal:...': the scheme must be redis or rediss");
    assertRefused("redis:///3", "the Redis URL has no host: 'redis:///3'");
    assertRefused("redis://hunter2@:6379", "the Redis URL has no host: 'redis://***@:6379'");
    assertRefused("redis://:hunter2@cache/zero", "the Redis URL's database must be a number, was 'zero'");
    assertRefused("redis://:hunter2@cache/-1", "the Redis URL's database must be a number, was '-1'");
    assertRefused("redis://:hunter2@cache:70000", "the Redis URL's port must be a number from 1 to 65535, was"
        + " '70000'");
    assertRefused("redis://:hunter2@cache:0", "the Redis URL's port must be a number from 1 to 65535, was '0'");
    assertRefused("redis://:hunter2@cache:port", "the Redis URL's port must be a number from 1 to 65535, was"
        + " 'port'");
    assertRefused("redis://:hunter2@::1", "the Redis URL's host has a ':' (an IPv6 address goes in brackets):"
        + " 'redis://:***@::1'");
    assertRefused("redis://:hunter2@cache?password=x", "the Redis URL must look like"
        + " redis://[[user]:password@]host[:port][/db] (rediss:// for TLS): it takes no query (?...) or fragment"
        + " (#...)");
    assertRefused("redis://:hunter2%zz@cache", "the Redis URL is not a URL: Malformed escape pair at index 16");
    assertRefused("redis://:hunter 2@cache", "the Redis URL is not a URL: Illegal character in authority at index 8");
  }

  private static void assertRefused(String url, String message) {
    assertThatThrownBy(() -> RedisUrl.parse(url)).isInstanceOf(IllegalArgumentException.class).hasMessage(message)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("hunter").doesNotContain("\n"));
  }

  private static void assertLogin(JedisClientConfig config, String user, String password) {
    RedisCredentials credentials = config.getCredentialsProvider().get();
    assertThat(credentials.getUser()).isEqualTo(user);
    assertThat(credentials.getPassword()).isEqualTo(password == null ? null : password.toCharArray());
  }
}
