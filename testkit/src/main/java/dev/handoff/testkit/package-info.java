/**
 * Helpers for the application's own verification tests: deterministic polling, waits with deadlines, a
 * replay assertion that proves replaying old messages changes nothing, and fault hooks' building blocks (a simulated
 * crash, a kill switch for a list consumer).
 */
package dev.handoff.testkit;
