package dev.handoff.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for the servers the tests start. A port is chosen, checked and only bound later by the server, so the
 * choice keeps clear of what else could take it in between:
 *
 * <ul>
 *   <li>below the kernel's ephemeral range (32768 and up on Linux), where no client socket of this machine gets its
 *       local port: a server restarted on the same port finds it free;
 *   <li>a band of its own for each Surefire fork ({@code handoff.test.fork}, set by the build), so two test JVMs
 *       running at once never pick the same port;
 *   <li>never the same port twice in one JVM.
 * </ul>
 *
 * <p>A cluster node's bus port is its port + 10000, which stays below the ephemeral range too.
 */
public final class FreePorts {

  private static final int FIRST = 10_000;
  private static final int BANDS = 4;
  private static final int BAND = 12_000 / BANDS;
  private static final Set<Integer> taken = new HashSet<>();

  private FreePorts() {}

  /** A port nobody listens on now, of this JVM's band, never returned before in this JVM. */
  public static int take() {
    return take(false);
  }

  /** A port free now, with its cluster bus port (+10000) free too. */
  static int takeWithBus() {
    return take(true);
  }

  private static synchronized int take(boolean withBus) {
    int band = Math.floorMod(Integer.getInteger("handoff.test.fork", 1) - 1, BANDS);
    int from = FIRST + band * BAND;
    for (int attempt = 0; attempt < 1_000; attempt++) {
      int port = from + ThreadLocalRandom.current().nextInt(BAND);
      if (!taken.contains(port) && bindable(port) && (!withBus || bindable(port + 10_000))) {
        taken.add(port);
        return port;
      }
    }
    throw new IllegalStateException("no free port in " + from + ".." + (from + BAND - 1));
  }

  private static boolean bindable(int port) {
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return socket.isBound();
    } catch (IOException e) {
      return false;
    }
  }
}
