package dev.handoff.spring.autoconfigure;

import dev.handoff.spring.HandoffStartupException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Prints a {@link HandoffStartupException} as the one line it is, instead of a stack of bean-creation failures. */
public final class HandoffFailureAnalyzer extends AbstractFailureAnalyzer<HandoffStartupException> {

  @Override
  protected FailureAnalysis analyze(Throwable rootFailure, HandoffStartupException cause) {
    return new FailureAnalysis(cause.getMessage(), "See docs/spring.md in handoff's repository.", cause);
  }
}
