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
    long random = RANDOM.nextLong();
    long randA = RANDOM.nextInt() & 0x0FFFL;
    long msb = (unixMillis << 16) | 0x7000L | randA;
    long lsb = (random & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
    return new UUID(msb, lsb);
  }

  /** The Unix milliseconds a version 7 UUID was made at. */
  public static long unixMillis(UUID uuid) {
    return uuid.getMostSignificantBits() >>> 16;
  }
}
