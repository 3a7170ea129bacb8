package dev.handoff.ledger.demo;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link DemoTest} on Redis lists ({@code --transport list}). */
class DemoOnListsTest extends DemoTest {
  DemoOnListsTest(TestEnvironment env) {
    super(env, Transport.LIST);
  }
}
