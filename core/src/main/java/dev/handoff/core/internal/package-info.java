/**
 * Implementation details shared by handoff's modules (the only internal package one module may use from another);
 * not an API, may change in any release.
 */
package dev.handoff.core.internal;
