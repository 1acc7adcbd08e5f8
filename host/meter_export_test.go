package host

// Metering turns the metering of modules compiled from now on on or off,
// and CloseOnContextDone wazero's own termination check of runtimes made
// from now on, for benchmarks that compare them. Not safe while modules are
// being compiled.
func Metering(on bool) { metering = on }

// CloseOnContextDone: see Metering.
func CloseOnContextDone(on bool) { closeOnContextDone = on }

// RewriteModule is the whole load-time rewrite of a 64 MiB plugin
// (metering, then the call-stack bound), without the memo.
func RewriteModule(bin []byte) ([]byte, error) { return rewriteModule(bin, callStackBudget(1024)) }

// MeterModule is the metering alone.
func MeterModule(bin []byte) ([]byte, error) { return meterModuleBytes(bin) }

// MeterQuantum is the fuel a refill hands out.
const MeterQuantum = meterQuantum
