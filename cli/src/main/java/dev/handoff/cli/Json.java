package dev.handoff.cli;

import java.util.Collection;
import java.util.Map;

/** Renders maps, lists, strings, numbers, booleans and nulls as JSON, for the commands' {@code --json}. */
public final class Json {

  private Json() {}

  public static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value);
    return out.toString();
  }

  private static void write(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Number || value instanceof Boolean) {
      out.append(value);
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : map.entrySet()) {
        if (!first) {
          out.append(',');
        }
        first = false;
        string(out, String.valueOf(e.getKey()));
        out.append(':');
        write(out, e.getValue());
      }
      out.append('}');
    } else if (value instanceof Collection<?> list) {
      out.append('[');
      boolean first = true;
      for (Object o : list) {
        if (!first) {
          out.append(',');
        }
        first = false;
        write(out, o);
      }
      out.append(']');
    } else {
      string(out, value.toString());
    }
  }

  private static void string(StringBuilder out, String s) {
    dev.handoff.core.internal.Json.writeString(out, s); // one escaper for every JSON handoff writes
  }
}
