package dev.handoff.outbox.internal;

import java.security.SecureRandom;
import java.util.UUID;

/**
 * RFC 9562 version 7 UUIDs: 48 bits of Unix milliseconds, then 74 random bits. Time-ordered, so message IDs
 * index well, and unguessable enough to be unique across processes without coordination.
 */
public final class UuidV7 {

  private static final SecureRandom RANDOM = new SecureRandom();

  private UuidV7() {}

  public static UUID next(long unixMillis) {
    // One call for all the random bits: each call to the platform's generator takes its lock and reads the kernel's
    // source, and every producer session of the process appends through it.
    byte[] random = new byte[10];
    RANDOM.nextBytes(random);
    long randA = ((random[0] & 0xFFL) << 8 | (random[1] & 0xFFL)) & 0x0FFFL;
    long randB = 0;
    for (int i = 2; i < 10; i++) {
      randB = randB << 8 | (random[i] & 0xFFL);
    }
    long msb = (unixMillis << 16) | 0x7000L | randA;
    long lsb = (randB & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
    return new UUID(msb, lsb);
  }

  /** The Unix milliseconds a version 7 UUID was made at. */
  public static long unixMillis(UUID uuid) {
    return uuid.getMostSignificantBits() >>> 16;
  }
}
