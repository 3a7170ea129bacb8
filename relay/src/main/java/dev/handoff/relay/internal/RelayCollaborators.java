package dev.handoff.relay.internal;

import dev.handoff.relay.RelayFaults;
import dev.handoff.relay.RelayListener;
import java.time.Clock;
import java.util.Objects;

/**
 * What a relay works with that is not a setting: the listener it reports to (wrapped by its meters when it has a
 * registry), the clock it reads for what it reports and for its retention cut, and the fault hooks at its crash
 * points.
 */
public record RelayCollaborators(RelayListener listener, Clock clock, RelayFaults faults) {

  public RelayCollaborators {
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(clock, "clock");
    Objects.requireNonNull(faults, "faults");
  }

  /** These collaborators with {@code other} as the listener. */
  public RelayCollaborators withListener(RelayListener other) {
    return new RelayCollaborators(other, clock, faults);
  }
}
