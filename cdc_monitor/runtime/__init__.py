"""The runtime: the Spark session (local and cluster defaults, the driver's log), JVM start-up
(the class archive, small-input JIT options) and jars (the operator jar per Spark minor). The only
package that starts a JVM; application verbs (scan, watch, gate, reconcile, warm-up) call it."""
