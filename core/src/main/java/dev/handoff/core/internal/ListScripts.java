package dev.handoff.core.internal;

/**
 * The scripts that read list elements, the relay's and the list consumer's alike: each is given the one Lua reader
 * of the element header ({@code element_header}, in {@code list-header.lua}) ahead of its own text, so that no
 * script parses the wire format on its own.
 */
public final class ListScripts {

  private static final String HEADER_READER = LuaScript.resourceText("/dev/handoff/core/list-header.lua");

  private ListScripts() {}

  /**
   * Like {@link #of}, for a script that must run when Redis is full ({@code maxmemory} with {@code noeviction}):
   * declared {@code allow-oom} (Redis 7.0+). Only for scripts that move what a list already holds or keep a
   * consumer's small bookkeeping: a consumer that can still take and acknowledge elements is what frees a full
   * Redis. Never for the relay's push, which a full Redis must refuse.
   */
  public static LuaScript runningWhenFull(String name, String body) {
    return LuaScript.of(name, "#!lua flags=allow-oom\n" + HEADER_READER + body);
  }

  /** A list script given as text, named {@code name} in errors, which may call {@code element_header(element)}. */
  public static LuaScript of(String name, String body) {
    return LuaScript.of(name, HEADER_READER + body);
  }

  /** A list script from a class path resource, which may call {@code element_header(element)}. */
  public static LuaScript resource(String path) {
    return LuaScript.of(LuaScript.nameOf(path), HEADER_READER + LuaScript.resourceText(path));
  }
}
