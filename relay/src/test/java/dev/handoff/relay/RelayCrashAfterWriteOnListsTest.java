package dev.handoff.relay;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link RelayCrashAfterWriteTest} on Redis lists (RPUSH). */
class RelayCrashAfterWriteOnListsTest extends RelayCrashAfterWriteTest {
  RelayCrashAfterWriteOnListsTest(TestEnvironment env) {
    super(env, Transport.LIST);
  }
}
