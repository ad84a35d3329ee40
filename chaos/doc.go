// Package chaos is Homeostat's fault harness. It runs the built binaries as
// real processes (a single `homeostat up`, or a three-node NATS cluster with
// every role in its own process), drives them with concurrent clients
// through the API while it injects faults — kill -9 and restart, SIGSTOP,
// network partitions between NATS nodes, crash loops of controllers and
// schedulers, node agents killed and restarted, bad values written straight
// into the store — and records every operation with its invoke and return
// times. Then it checks the history: linearizability per key (with
// porcupine, as etcd's robustness tests do), that every list holds every
// object acknowledged before it began, that watches deliver each change once
// and in order and converge on the store, that no acknowledged write was
// lost, that no pod slot ever had two live pods, that a Deployment never
// had more pods than replicas plus surge, and how long the system took to
// converge once the faults stopped.
//
// Everything listens on loopback, and every run is bounded in time.
package chaos
