package dev.handoff.core.internal;

import dev.handoff.core.RedisConnectionSpec;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.Locale;
import javax.net.ssl.SSLException;

/**
 * Turns a failure to connect to Redis into one line that names its cause, for the errors a TLS set-up gets wrong
 * most: an untrusted certificate, a certificate for another host, a missing client certificate, and TLS on one
 * side only. The JDK's own messages name none of these in words a user would search for.
 */
public final class RedisFailures {

  private RedisFailures() {}

  /** The cause of {@code failure} in one line, without the password; the first line of its message if unknown. */
  public static String describe(RedisConnectionSpec spec, Throwable failure) {
    boolean tls = spec.url().tls();
    String trust = spec.caFile().map(f -> "a CA in " + f).orElse("a CA of the JVM's truststore");
    for (Throwable t = failure; t != null; t = t.getCause()) {
      String m = String.valueOf(t.getMessage());
      String lower = m.toLowerCase(Locale.ROOT);
      if (lower.contains("pkix path") || lower.contains("certification path")) {
        return "TLS: the server's certificate is not trusted (not signed by " + trust + ")";
      }
      if (lower.contains("no subject alternative") || lower.contains("no name matching")
          || lower.contains("hostname verification")) {
        return "TLS: the server's certificate does not name the host '" + spec.url().host()
            + "' (hostname verification is on; list the host in the certificate's subject alternative names)";
      }
      if (lower.contains("certificate_required")) {
        return "TLS: the server requires a client certificate (mutual TLS) and none was given";
      }
      if (lower.contains("bad_certificate") || lower.contains("unknown_ca")
          || lower.contains("certificate_unknown")) {
        return "TLS: the server refused the client certificate"
            + spec.certificateFile().map(f -> " " + f).orElse("") + " (" + firstLine(m) + ")";
      }
      if (tls && spec.certificateFile().isEmpty() && (lower.contains("broken pipe")
          || t instanceof SocketException && lower.contains("reset") || lower.contains("unexpected end of stream"))) {
        // TLS 1.3 ends the client's handshake before the server has checked the client: a server that wants a
        // certificate then closes the connection, and the client sees the alert only if it reads before it writes.
        return "TLS: the server closed the connection after the handshake; if it requires a client certificate"
            + " (mutual TLS), none was given";
      }
      if (tls && (lower.contains("unsupported or unrecognized ssl message") || lower.contains("plaintext")
          || (t instanceof SocketTimeoutException && inHandshake(t)))) {
        return "TLS: the server did not answer the TLS handshake: not a TLS port? (use redis:// for plain Redis)";
      }
      if (!tls && (t instanceof SocketException && lower.contains("reset")
          || lower.contains("unexpected end of stream"))) {
        return "the server closed the connection on the first command: is it a TLS port?"
            + " (the URL is redis://; use rediss:// for TLS)";
      }
      if (t instanceof SSLException && t.getCause() == null) {
        return "TLS: " + firstLine(m);
      }
    }
    return firstLine(failure.getMessage());
  }

  private static boolean inHandshake(Throwable t) {
    for (StackTraceElement e : t.getStackTrace()) {
      if (e.getMethodName().contains("Handshake") || e.getMethodName().contains("handshake")) {
        return true;
      }
    }
    return false;
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "no details";
    }
    int nl = message.indexOf('\n');
    return nl < 0 ? message : message.substring(0, nl);
  }
}
