package dev.handoff.consumer.ordering;

import java.time.Duration;
import java.util.Objects;

/**
 * Whether a stream consumer group applies each shard's messages in stream order, set with
 * {@code StreamConsumerBuilder.ordering(...)}. Immutable.
 *
 * <p>Unordered ({@link #NONE}, the default), every worker of every consumer reads from every shard, and a batch's
 * effects may commit before those of an earlier batch of the same shard; a failed message is retried after its
 * successors went through.
 *
 * <p>{@linkplain #perShard() Per shard}, the group guarantees, for every shard of the topic:
 * <ul>
 *   <li><b>One owner.</b> A consumer process owns the shard through a lease with a fencing epoch in PostgreSQL (the
 *       {@code consumer_lease} table), as relays own streams. The shards spread evenly over the group's live
 *       consumers (each started {@code StreamConsumer} counts once) and move when one joins or leaves; a consumer's
 *       workers share its shards, one worker on a shard at a time. Parallelism is therefore the number of shards.
 *   <li><b>In order.</b> The owner reads the shard's entries in stream order, one batch at a time, and commits them
 *       in that order. A shard just taken first settles what its former owner left pending, in order, then reads
 *       on.
 *   <li><b>A failure blocks only its shard.</b> A message whose handler fails is retried with the configured
 *       backoff while its successors wait; other shards keep flowing. After {@code maxDeliveries},
 *       {@link #whenExhausted()} decides. A blocked or stopped shard shows in status, health and metrics.
 *   <li><b>Fenced.</b> The batch's transaction records the shard's position under the lease epoch it holds, and
 *       rolls back if another consumer took the shard meanwhile: a former owner paused past its lease cannot commit,
 *       and order holds even with zombies.
 * </ul>
 * Messages of the same key are on the same shard, so a key's messages apply in the order they were appended (per
 * shard: the order their transactions committed). Redis lists have no such mode: a list consumer's failed message is
 * pushed back behind its successors by design (see docs/lists.md).
 *
 * @param ordered whether the group is ordered per shard
 * @param whenExhausted what becomes of a message that failed {@code maxDeliveries} times; default
 *     {@link WhenExhausted#DEAD_LETTER_AND_CONTINUE}
 * @param leaseTtl how long a shard's lease lasts without renewal (renewed every third of it): a consumer that died
 *     gives its shards up after at most this long; default 10 s, between 1 s and 10 minutes
 */
public record Ordering(boolean ordered, WhenExhausted whenExhausted, Duration leaseTtl) {

  /** The default lease TTL of an ordered group's shards. */
  public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(10);

  /** Unordered: the default. */
  public static final Ordering NONE = new Ordering(false, WhenExhausted.DEAD_LETTER_AND_CONTINUE, DEFAULT_LEASE_TTL);

  public Ordering {
    Objects.requireNonNull(whenExhausted, "whenExhausted");
    Objects.requireNonNull(leaseTtl, "leaseTtl");
    if (leaseTtl.compareTo(Duration.ofSeconds(1)) < 0 || leaseTtl.compareTo(Duration.ofMinutes(10)) > 0) {
      throw new IllegalArgumentException("leaseTtl must be between 1 s and 10 minutes, was " + leaseTtl);
    }
  }

  /** Ordered per shard, dead-lettering an exhausted message and going on, with a 10 s lease. */
  public static Ordering perShard() {
    return new Ordering(true, WhenExhausted.DEAD_LETTER_AND_CONTINUE, DEFAULT_LEASE_TTL);
  }

  /** This ordering with another policy for an exhausted message. */
  public Ordering whenExhausted(WhenExhausted policy) {
    return new Ordering(ordered, policy, leaseTtl);
  }

  /** This ordering with another lease TTL. */
  public Ordering leaseTtl(Duration ttl) {
    return new Ordering(ordered, whenExhausted, ttl);
  }
}
