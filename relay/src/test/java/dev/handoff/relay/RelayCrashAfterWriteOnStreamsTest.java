package dev.handoff.relay;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link RelayCrashAfterWriteTest} on Redis streams (XADD). */
class RelayCrashAfterWriteOnStreamsTest extends RelayCrashAfterWriteTest {
  RelayCrashAfterWriteOnStreamsTest(TestEnvironment env) {
    super(env, Transport.STREAM);
  }
}
