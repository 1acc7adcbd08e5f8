package host

import "time"

// SetPluginTimeClock makes h's plugin time budget read now instead of the
// real clock. Call it before the first call.
func SetPluginTimeClock(h *Host, now func() time.Time) { h.budgets.now = now }
