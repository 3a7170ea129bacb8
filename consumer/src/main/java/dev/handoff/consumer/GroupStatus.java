package dev.handoff.consumer;

/**
 * What both transports' status reports say alike: {@link ConsumerStatus} for streams and {@link ListStatus} for
 * lists add their own figures (backlog and pending, or waiting and in processing).
 */
public interface GroupStatus {

  /** The consumer group (on lists: the inbox scope). */
  String group();

  /** The topic consumed. */
  String topic();

  /** Dead letters of the group still dead. */
  long deadLetters();

  /** Duplicates this consumer instance skipped since it was built (not persisted). */
  long duplicatesSkipped();

  /** Whether nothing is waiting for the group and nothing is in flight. */
  boolean drained();
}
