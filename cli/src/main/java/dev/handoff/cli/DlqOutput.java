package dev.handoff.cli;

import dev.handoff.consumer.admin.RetryRequestResult;
import dev.handoff.consumer.status.DeadLetter;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** What {@code handoff dlq} prints: a table, a detail view, the one-line summaries, and the same as JSON. */
final class DlqOutput {

  private static final String ROW = "%-10s %-24s %-16s %-24s %10s  %-24s %s%n";

  private DlqOutput() {}

  static void table(PrintWriter out, List<DeadLetter> letters) {
    if (letters.isEmpty()) {
      return;
    }
    out.printf(ROW, "ID", "GROUP", "STATE", "DEAD AT", "DELIVERIES", "TYPE", "ERROR");
    for (DeadLetter d : letters) {
      out.printf(ROW, d.id(), d.group(), d.state().label(), d.deadAt(), d.delivery().count(), d.type() == null ? "-"
          : d.type(), shorten(CommandLines.firstLine(d.error()), 100));
    }
  }

  /** {@code 3 dead letters of group billing: 1 dead, 1 retry-requested, 1 retried}. */
  static String listSummary(List<DeadLetter> letters, String scope, int limit) {
    Map<DeadLetter.State, Integer> byState = new EnumMap<>(DeadLetter.State.class);
    for (DeadLetter d : letters) {
      byState.merge(d.state(), 1, Integer::sum);
    }
    List<String> parts = new ArrayList<>();
    byState.forEach((state, n) -> parts.add(n + " " + state.label()));
    String summary = letters.size() + " dead letter" + (letters.size() == 1 ? "" : "s") + " of " + scope
        + (parts.isEmpty() ? "" : ": " + String.join(", ", parts));
    return letters.size() == limit
        ? summary + " (the newest " + limit + "; there may be more: raise --limit)" : summary;
  }

  /** {@code requested retry of 1 dead letter of group billing (the running consumers pick it up)}. */
  static String retrySummary(RetryRequestResult r, String scope) {
    long n = r.requested();
    String text = "requested retry of " + n + " dead letter" + (n == 1 ? "" : "s") + " of " + scope
        + (n == 0 ? " (none matched that is still dead)"
            : " (the running consumers pick " + (n == 1 ? "it" : "them") + " up)");
    return r.notRetryable() == 0 ? text : text + "; " + r.notRetryable() + " cannot be retried (the entry could not"
        + " be decoded or was lost, so the message is not stored)";
  }

  static void details(PrintWriter out, DeadLetter d) {
    out.println("dead letter " + d.id() + " of group " + d.group() + ": " + d.state().label()
        + (d.retryable() ? "" : d.state() == DeadLetter.State.RETRIED ? "" : " (cannot be retried)"));
    line(out, "message", d.messageId());
    line(out, "topic", d.topic());
    line(out, "type", d.type());
    line(out, "stream", d.delivery().streamKey() + " " + d.delivery().streamId());
    line(out, "deliveries", d.delivery().count());
    line(out, "dead at", d.deadAt());
    line(out, "retry asked", d.retry().requestedAt());
    line(out, "retried at", d.retry().retriedAt());
    line(out, "retry failed", d.retry().failedAt());
    line(out, "error", indent(d.error()));
    line(out, "retry error", d.retry().error() == null ? null : indent(d.retry().error()));
  }

  static String json(List<DeadLetter> letters) {
    return Json.write(letters.stream().map(DlqOutput::fields).toList());
  }

  static String json(DeadLetter d) {
    return Json.write(fields(d));
  }

  private static Map<String, Object> fields(DeadLetter d) {
    Map<String, Object> x = new LinkedHashMap<>();
    x.put("id", d.id());
    x.put("group", d.group());
    x.put("state", d.state().label());
    x.put("message_id", d.messageId());
    x.put("topic", d.topic());
    x.put("type", d.type());
    x.put("stream_key", d.delivery().streamKey());
    x.put("stream_id", d.delivery().streamId());
    x.put("deliveries", d.delivery().count());
    x.put("dead_at", d.deadAt());
    x.put("retry_requested_at", d.retry().requestedAt());
    x.put("retried_at", d.retry().retriedAt());
    x.put("retry_failed_at", d.retry().failedAt());
    x.put("retryable", d.retryable());
    x.put("error", d.error());
    x.put("retry_error", d.retry().error());
    return x;
  }

  private static void line(PrintWriter out, String name, Object value) {
    if (value != null) {
      out.printf("  %-13s %s%n", name, value);
    }
  }

  private static String indent(String text) {
    return text.strip().replace("\n", "\n                ");
  }

  private static String shorten(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max - 3) + "...";
  }
}
