package dev.handoff.consumer;

import dev.handoff.core.HandoffException;

/** A consumer operation failed at run time; the message names the group, stream or dead letter involved. */
public class ConsumerException extends HandoffException {

  private static final long serialVersionUID = 1L;

  public ConsumerException(String message) {
    super(message);
  }

  public ConsumerException(String message, Throwable cause) {
    super(message, cause);
  }
}
