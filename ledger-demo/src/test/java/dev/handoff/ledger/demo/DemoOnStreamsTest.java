package dev.handoff.ledger.demo;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link DemoTest} on Redis streams, the default. */
class DemoOnStreamsTest extends DemoTest {
  DemoOnStreamsTest(TestEnvironment env) {
    super(env, Transport.STREAM);
  }
}
