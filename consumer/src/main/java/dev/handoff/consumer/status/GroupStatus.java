package dev.handoff.consumer.status;

import java.util.List;

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

  /**
   * This consumer instance's workers that a failure of the environment has paused (a lost connection, a revoked
   * grant, a missing table), each with its reason; empty while every worker works. Not persisted: another process
   * sees only its own.
   */
  List<PausedWorker> paused();

  /** Whether nothing is waiting for the group and nothing is in flight. */
  boolean drained();
}
