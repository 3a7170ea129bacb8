package dev.handoff.consumer.internal;

import java.net.InetAddress;
import java.security.SecureRandom;
import java.util.HexFormat;

/** Default consumer names: unique per live process, readable in {@code XINFO CONSUMERS}. */
public final class ConsumerNames {

  private static final SecureRandom RANDOM = new SecureRandom();

  private ConsumerNames() {}

  /**
   * {@code <host>-<pid>-<random>}: the host and pid say where a consumer lives, the random suffix keeps a
   * restarted process that got the same pid (containers often run as pid 1) from inheriting a dead one's name.
   */
  public static String generate() {
    byte[] suffix = new byte[3];
    RANDOM.nextBytes(suffix);
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      host = "host";
    }
    host = host.replaceAll("[^A-Za-z0-9._-]", "_");
    if (host.isEmpty() || !Character.isLetterOrDigit(host.charAt(0))) {
      host = "h" + host;
    }
    if (host.length() > 100) {
      host = host.substring(0, 100);
    }
    return host + "-" + ProcessHandle.current().pid() + "-" + HexFormat.of().formatHex(suffix);
  }
}
