package dev.handoff.ledger;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerCliProcessTest} on Redis streams, with 3,000 payments. */
class LedgerCliProcessOnStreamsTest extends LedgerCliProcessTest {
  LedgerCliProcessOnStreamsTest(TestEnvironment env) {
    super(env, Transport.STREAM, 3_000);
  }
}
