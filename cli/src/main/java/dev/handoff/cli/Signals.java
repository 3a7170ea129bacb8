package dev.handoff.cli;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.concurrent.CountDownLatch;

/**
 * Waits for SIGTERM or SIGINT (Ctrl-C), so a long-running command can drain and exit 0.
 *
 * <p>The handlers are installed with sun.misc.Signal through reflection: javac's "internal proprietary API" warning
 * cannot be suppressed, and main code compiles with warnings as errors. The calls are the same as
 * {@code Signal.handle(new Signal("TERM"), s -> stop.countDown())}.
 */
public final class Signals {

  private Signals() {}

  /** A latch released by the first SIGTERM or SIGINT. Used by every command of handoff that runs until stopped. */
  public static CountDownLatch termination() {
    CountDownLatch stop = new CountDownLatch(1);
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handlerType = Class.forName("sun.misc.SignalHandler");
      Object handler = Proxy.newProxyInstance(Signals.class.getClassLoader(), new Class<?>[] {handlerType},
          (proxy, method, args) -> {
            switch (method.getName()) {
              case "handle":
                stop.countDown();
                return null;
              case "hashCode":
                return System.identityHashCode(proxy);
              case "equals":
                return proxy == args[0];
              case "toString":
                return "termination handler";
              default:
                throw new UnsupportedOperationException(method.toString());
            }
          });
      Method handle = signal.getMethod("handle", signal, handlerType);
      for (String name : new String[] {"TERM", "INT"}) {
        handle.invoke(null, signal.getConstructor(String.class).newInstance(name), handler);
      }
    } catch (InvocationTargetException e) {
      // Signal's own exceptions (an unknown signal, or one the JVM already uses), as a direct call throws them.
      if (e.getCause() instanceof RuntimeException) {
        throw (RuntimeException) e.getCause();
      }
      if (e.getCause() instanceof Error) {
        throw (Error) e.getCause();
      }
      throw new IllegalStateException(e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("sun.misc.Signal is not available", e);
    }
    return stop;
  }
}
