package dev.handoff.ledger;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerEndToEndTest} on Redis streams: 10,000 payments, consumer threads killed at random. */
class LedgerEndToEndOnStreamsTest extends LedgerEndToEndTest {
  LedgerEndToEndOnStreamsTest(TestEnvironment env) {
    super(env, Transport.STREAM);
  }
}
