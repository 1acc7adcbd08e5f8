// Package loadgen drives a bounded load and measures it: a fixed set of
// workers, each with its own request function, run requests until the
// run's request bound or its wall-time bound is reached — whichever comes
// first — or until the run is stopped or its context ends. Workers run
// back to back (a closed loop, which saturates what it drives) or paced
// by an interval, to offer a load below saturation.
//
// Every request's latency and error are recorded under the phase that was
// current when it started. A controller switches phases while the load
// runs (SetPhase) and paces itself by Completed, so one run measures
// windows such as "steady" and "swapping" side by side, on the same
// machine at the same time: the only comparison these shared machines make
// fair. Result.Merge takes several phases together.
//
// Percentiles use the nearest-rank method (Percentile); latencies include
// failed requests, which are also counted apart.
package loadgen
