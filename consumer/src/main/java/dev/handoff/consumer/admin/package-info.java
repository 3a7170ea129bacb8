/**
 * What an operator does to a topic and its groups, from code or through the {@code handoff} command line: read a
 * topic's state ({@link dev.handoff.consumer.admin.TopicInspector}), list, retry and purge dead letters
 * ({@link dev.handoff.consumer.admin.DeadLetterAdmin}), rewind a group or trim a stream
 * ({@link dev.handoff.consumer.admin.StreamAdmin}). Nothing here runs inside a consumer; each class is thread-safe.
 */
package dev.handoff.consumer.admin;
