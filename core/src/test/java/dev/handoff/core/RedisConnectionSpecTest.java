package dev.handoff.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.JedisClientConfig;

/** The settings a spec gives Jedis, and its defaults as documented. */
class RedisConnectionSpecTest {

  @Test
  void defaultsAreTheJvmTruststoreHostnameVerificationAndTwoSecondTimeouts() {
    RedisConnectionSpec spec = RedisConnectionSpec.of(RedisUrl.parse("rediss://app:hunter2@cache:6380/2"));
    assertThat(spec.verifyHostname()).isTrue();
    assertThat(spec.caFile()).isEmpty();
    assertThat(spec.certificateFile()).isEmpty();
    assertThat(spec.connectTimeout()).isEqualTo(RedisConnectionSpec.DEFAULT_CONNECT_TIMEOUT)
        .isEqualTo(Duration.ofSeconds(2));
    assertThat(spec.socketTimeout()).isEqualTo(RedisConnectionSpec.DEFAULT_SOCKET_TIMEOUT)
        .isEqualTo(Duration.ofSeconds(2));
    JedisClientConfig config = spec.clientConfig();
    assertThat(config.isSsl()).isTrue();
    assertThat(config.getUser()).isEqualTo("app");
    assertThat(config.getPassword()).isEqualTo("hunter2");
    assertThat(config.getDatabase()).isEqualTo(2);
    assertThat(config.getConnectionTimeoutMillis()).isEqualTo(2_000);
    assertThat(config.getSocketTimeoutMillis()).isEqualTo(2_000);
    assertThat(spec.hostAndPort().getHost()).isEqualTo("cache");
    assertThat(spec.hostAndPort().getPort()).isEqualTo(6380);
    assertThat(spec).hasToString("rediss://app:***@cache:6380/2");
  }

  @Test
  @SuppressWarnings("deprecation") // the SSL parameters are read back through Jedis's deprecated getter
  void hostnameVerificationIsAnEndpointCheckUnlessTurnedOffAndTimeoutsAreCarried() {
    RedisConnectionSpec on = RedisConnectionSpec.builder("rediss://cache").connectTimeout(Duration.ofMillis(700))
        .socketTimeout(Duration.ofSeconds(9)).build();
    assertThat(on.clientConfig().getSslParameters().getEndpointIdentificationAlgorithm()).isEqualTo("HTTPS");
    assertThat(on.clientConfig().getConnectionTimeoutMillis()).isEqualTo(700);
    assertThat(on.clientConfig().getSocketTimeoutMillis()).isEqualTo(9_000);
    RedisConnectionSpec off = RedisConnectionSpec.builder("rediss://cache").disableHostnameVerification().build();
    assertThat(off.verifyHostname()).isFalse();
    assertThat(off.clientConfig().getSslParameters().getEndpointIdentificationAlgorithm()).isNull();
    assertThat(off).hasToString("rediss://cache:6379/0 hostname-verification=off");
    assertThat(RedisConnectionSpec.builder("redis://cache").build().clientConfig().isSsl()).isFalse();
  }

  @Test
  void aTimeoutBelowOneMillisecondIsRefusedByName() {
    assertThatThrownBy(() -> RedisConnectionSpec.builder("redis://cache").socketTimeout(Duration.ZERO).build())
        .isInstanceOf(IllegalArgumentException.class).hasMessage("socketTimeout must be at least 1 ms, was PT0S");
    assertThatThrownBy(() -> RedisConnectionSpec.builder("redis://cache").connectTimeout(Duration.ofNanos(5))
        .build()).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("connectTimeout must be at least 1 ms, was PT0.000000005S");
  }
}
