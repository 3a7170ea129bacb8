package dev.handoff.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RedisConnectionsTest {

  @Test
  void blockingSocketTimeoutAddsAtLeastOneSecondToShortBlocks() {
    assertThat(RedisConnections.blockingSocketTimeout(Duration.ofMillis(100))).isEqualTo(Duration.ofMillis(1_100));
    assertThat(RedisConnections.blockingSocketTimeout(Duration.ofSeconds(1))).isEqualTo(Duration.ofSeconds(2));
    assertThat(RedisConnections.blockingSocketTimeout(Duration.ofSeconds(2))).isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void blockingSocketTimeoutAddsHalfOfLongBlocks() {
    assertThat(RedisConnections.blockingSocketTimeout(Duration.ofSeconds(10))).isEqualTo(Duration.ofSeconds(15));
    assertThat(RedisConnections.blockingSocketTimeout(Duration.ofSeconds(60))).isEqualTo(Duration.ofSeconds(90));
  }
}
