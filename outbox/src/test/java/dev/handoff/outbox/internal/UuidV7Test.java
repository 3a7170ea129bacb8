package dev.handoff.outbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class UuidV7Test {

  private static final long MILLIS = 1_796_600_000_123L;

  @Test
  void carriesTheMillisVersionSevenAndTheRfcVariant() {
    for (int i = 0; i < 10_000; i++) {
      UUID id = UuidV7.next(MILLIS);
      assertThat(id.version()).isEqualTo(7);
      assertThat(id.variant()).isEqualTo(2);
      assertThat(UuidV7.unixMillis(id)).isEqualTo(MILLIS);
    }
  }

  /** Every one of the 74 random bits takes both values, so none is stuck at 0 or 1 by a wrong mask or shift. */
  @Test
  void everyRandomBitVaries() {
    long msbOnes = 0;
    long msbZeros = 0;
    long lsbOnes = 0;
    long lsbZeros = 0;
    for (int i = 0; i < 2_000; i++) {
      UUID id = UuidV7.next(MILLIS);
      msbOnes |= id.getMostSignificantBits();
      msbZeros |= ~id.getMostSignificantBits();
      lsbOnes |= id.getLeastSignificantBits();
      lsbZeros |= ~id.getLeastSignificantBits();
    }
    assertThat(Long.bitCount(msbOnes & msbZeros & 0x0FFFL)).as("rand_a").isEqualTo(12);
    assertThat(Long.bitCount(lsbOnes & lsbZeros & 0x3FFF_FFFF_FFFF_FFFFL)).as("rand_b").isEqualTo(62);
  }

  @Test
  void sixteenThreadsInOneMillisecondNeverRepeatAnId() throws Exception {
    Set<UUID> seen = ConcurrentHashMap.newKeySet();
    ExecutorService threads = Executors.newFixedThreadPool(16);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 16; t++) {
        done.add(threads.submit(() -> {
          for (int i = 0; i < 20_000; i++) {
            seen.add(UuidV7.next(MILLIS));
          }
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      threads.shutdownNow();
    }
    assertThat(seen).hasSize(16 * 20_000);
  }
}
