/**
 * Helpers for the application's own verification tests: deterministic polling, waits with deadlines, and a
 * replay assertion that proves replaying old messages changes nothing.
 */
package dev.handoff.testkit;
