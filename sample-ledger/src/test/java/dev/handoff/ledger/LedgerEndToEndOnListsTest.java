package dev.handoff.ledger;

import dev.handoff.core.Transport;
import dev.handoff.testing.TestEnvironment;

/** {@link LedgerEndToEndTest} on Redis lists: 3,000 payments, a consumer killed before its LREM and restarted. */
class LedgerEndToEndOnListsTest extends LedgerEndToEndTest {
  LedgerEndToEndOnListsTest(TestEnvironment env) {
    super(env, Transport.LIST);
  }
}
