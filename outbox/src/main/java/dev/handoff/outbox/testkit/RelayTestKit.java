package dev.handoff.outbox.testkit;

import dev.handoff.outbox.internal.DefaultRelay;
import dev.handoff.outbox.internal.MetricsRefresher;
import dev.handoff.relay.Relay;

/** Test helpers for code that runs a {@link Relay}. Not for production use. */
public final class RelayTestKit {

  private RelayTestKit() {}

  /**
   * Refreshes the relay's gauges (outbox depth, oldest unpublished age, stream length) now, on the caller's thread,
   * as its metrics refresher does every {@code metricsRefreshInterval}: a test that must not depend on that
   * schedule calls this instead.
   *
   * @throws IllegalStateException if the relay was built without a {@code meterRegistry}
   */
  public static void refreshMetricsNow(Relay relay) {
    MetricsRefresher.refreshNow(((DefaultRelay) relay).metrics(), "relay " + relay.config().owner());
  }
}
