package dev.handoff.core;

/**
 * A component states a shard count for a topic that differs from the count declared for it in the database (the
 * {@code topic} table, written by whichever outbox, relay or consumer stated one first). Nothing was appended,
 * published or consumed for that topic: its keys would have hashed onto shards that the other components never
 * serve. The message names the topic, both counts and the component.
 */
public final class TopicMismatchException extends HandoffException {

  private static final long serialVersionUID = 1L;

  private final String topic;
  private final int declared;
  private final int stated;

  public TopicMismatchException(String topic, int declared, int stated, String message) {
    super(message);
    this.topic = topic;
    this.declared = declared;
    this.stated = stated;
  }

  /** The topic. */
  public String topic() {
    return topic;
  }

  /** The shard count on record in the database. */
  public int declared() {
    return declared;
  }

  /** The shard count this component stated. */
  public int stated() {
    return stated;
  }
}
