package dev.handoff.ledger;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link DemoTest} on Redis lists ({@code demo --transport list}). */
class DemoOnListsTest extends DemoTest {
  DemoOnListsTest(TestEnvironment env) {
    super(env, Transport.LIST);
  }
}
