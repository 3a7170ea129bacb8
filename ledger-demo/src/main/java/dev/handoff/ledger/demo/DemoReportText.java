package dev.handoff.ledger.demo;

import dev.handoff.core.Transport;
import java.util.ArrayList;
import java.util.List;

/** The demo's report as it prints it: the counts, what each is made of, the naive contrast and the audit. */
final class DemoReportText {

  private DemoReportText() {}

  static List<String> lines(Demo.Report r) {
    List<String> out = new ArrayList<>();
    out.add("");
    out.add("== report ==");
    out.add(row("payments", r.payments(), r.poison() + " poison"));
    out.add(row("charges", r.charges(), "one per payment that is not poison"));
    out.add(row("deliveries", r.deliveries(), String.format("charged %,d + duplicates skipped %,d + failed %,d"
        + " + dead-lettered %,d + committed by the killed worker %,d", r.charged(), r.duplicates(), r.failed(),
        r.deadLettered(), r.unreported())));
    boolean lists = r.transport() == Transport.LIST;
    if (lists) {
      out.add(row("duplicates skipped", r.duplicates(), String.format("the inbox skipped them: %,d pushed again, the"
          + " rest returned after the crash", r.replayed())));
      out.add(row("reclaimed", r.reclaimed(), "returned to the head of the lists by a reaper (a dead consumer's"
          + " processing lists)"));
    } else {
      out.add(row("duplicates skipped", r.duplicates(), String.format("the inbox skipped them: %,d replayed, the rest"
          + " redelivered after the crash", r.replayed())));
      out.add(row("reclaimed", r.reclaimed(), "claimed from a dead or backing-off consumer (XAUTOCLAIM)"));
    }
    out.add(row("dead letters", r.deadLetters(), "the poison payment, after its last delivery"));
    out.add(String.format("%-20s %10.1fs  (%.1fs until every payment was charged)", "elapsed",
        r.elapsed().toMillis() / 1000.0, r.firstDrain().toMillis() / 1000.0));
    out.add(String.format("%-20s %,10.0f  payments/s end to end, faults included", "throughput", r.throughput()));
    if (lists) {
      out.add(row("list pushes", r.streamEntries(), String.format("by the relays, for %,d outbox rows: relay-2 re-sent"
          + " %,d rows relay-1 had pushed, the push script skipped them (at or below the last-pushed marker)",
          r.streamMessages(), r.relayResent())));
      out.add(row("list capacity", r.listCapacity(), "per shard, waiting + in processing; the outbox held the rest"));
      out.add("");
      out.add("naive consumer: not run on lists. A list element goes to one consumer, so a second, naive group"
          + " cannot read the ledger's messages beside it (fan-out needs streams); run the demo with --transport"
          + " stream for the contrast.");
    } else {
      out.add(row("stream entries", r.streamEntries(), String.format("%,d distinct messages: relay-2 re-sent %,d rows"
          + " relay-1 had added, Redis refused them as already there", r.streamMessages(), r.relayResent())));
      out.add("");
      out.add(String.format("naive consumer (no inbox, same stream, same crash and replay): %,d charges for %,d"
          + " payments: %,d payments charged more than once, %,d extra charges (%,d after the crash between"
          + " commit and XACK, %,d from the replay)", r.naiveCharges(), r.payments() - r.poison(),
          r.naiveDoubleCharged(), r.naiveExtraCharges(), r.naiveCrashExtra(),
          r.naiveExtraCharges() - r.naiveCrashExtra()));
    }
    out.add("");
    out.addAll(r.audit().lines());
    if (!r.completed()) {
      out.add("the demo did not finish within its deadline");
    }
    return out;
  }

  private static String row(String label, long n, String note) {
    return String.format("%-20s %,10d  %s", label, n, note);
  }
}
