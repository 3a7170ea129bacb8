package dev.handoff.core.internal;

import java.util.LinkedHashMap;
import java.util.Map;

/** The one JSON shape handoff writes and reads itself: a flat object of string values (message headers). */
public final class Json {

  private Json() {}

  public static String writeStringMap(Map<String, String> map) {
    if (map.isEmpty()) {
      return "{}";
    }
    StringBuilder out = new StringBuilder(32 * map.size());
    out.append('{');
    boolean first = true;
    for (Map.Entry<String, String> e : map.entrySet()) {
      if (!first) {
        out.append(',');
      }
      first = false;
      writeString(out, e.getKey());
      out.append(':');
      writeString(out, e.getValue());
    }
    return out.append('}').toString();
  }

  /** Appends {@code s} as a JSON string: quoted, with quotes, backslashes and control characters escaped. */
  public static void writeString(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /**
   * Parses a flat JSON object whose values are strings, as written by {@link #writeStringMap(Map)} or by
   * PostgreSQL's jsonb output.
   *
   * @throws IllegalArgumentException if the text is not such an object
   */
  public static Map<String, String> readStringMap(String json) {
    Parser p = new Parser(json);
    Map<String, String> map = new LinkedHashMap<>();
    p.skipWhitespace();
    p.expect('{');
    p.skipWhitespace();
    if (p.peek() == '}') {
      p.pos++;
    } else {
      while (true) {
        p.skipWhitespace();
        String key = p.string();
        p.skipWhitespace();
        p.expect(':');
        p.skipWhitespace();
        map.put(key, p.string());
        p.skipWhitespace();
        char c = p.next();
        if (c == '}') {
          break;
        }
        if (c != ',') {
          throw p.error("expected ',' or '}'");
        }
      }
    }
    p.skipWhitespace();
    if (p.pos != json.length()) {
      throw p.error("unexpected trailing characters");
    }
    return map;
  }

  private static final class Parser {
    private final String s;
    private int pos;

    Parser(String s) {
      this.s = s;
    }

    char peek() {
      if (pos >= s.length()) {
        throw error("unexpected end");
      }
      return s.charAt(pos);
    }

    char next() {
      char c = peek();
      pos++;
      return c;
    }

    void expect(char c) {
      if (next() != c) {
        throw error("expected '" + c + "'");
      }
    }

    void skipWhitespace() {
      while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) {
        pos++;
      }
    }

    String string() {
      expect('"');
      StringBuilder out = new StringBuilder();
      while (true) {
        char c = next();
        if (c == '"') {
          return out.toString();
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char esc = next();
        switch (esc) {
          case '"', '\\', '/' -> out.append(esc);
          case 'n' -> out.append('\n');
          case 'r' -> out.append('\r');
          case 't' -> out.append('\t');
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'u' -> {
            if (pos + 4 > s.length()) {
              throw error("truncated \\u escape");
            }
            out.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
            pos += 4;
          }
          default -> throw error("bad escape \\" + esc);
        }
      }
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException("invalid headers JSON at offset " + pos + ": " + what);
    }
  }
}
