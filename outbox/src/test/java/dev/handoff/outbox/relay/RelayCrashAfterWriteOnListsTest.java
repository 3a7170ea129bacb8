package dev.handoff.outbox.relay;

import dev.handoff.outbox.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link RelayCrashAfterWriteTest} on Redis lists (RPUSH). */
class RelayCrashAfterWriteOnListsTest extends RelayCrashAfterWriteTest {
  RelayCrashAfterWriteOnListsTest(TestEnvironment env) {
    super(env, Transport.LIST);
  }
}
