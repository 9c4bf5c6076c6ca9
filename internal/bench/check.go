package bench

import "errors"

// ErrOptions is Check's answer to options out of range; its text is what msgx bench says.
var ErrOptions = errors.New("--messages, --rate, --clients and --floor-time must be positive, --targets is not negative, --workload is day or classic")

// Check reports ErrOptions when options a user gave (msgx bench's flags, each set) are out of
// range: Messages, Rate, Clients and FloorTime not positive, History, Targets, AsOfWait or
// Flights negative, or a Workload other than day or classic. Unlike Run's defaults, it takes a
// zero count for a mistake, not for "the default".
func (o Options) Check() error {
	if o.Messages <= 0 || o.Rate <= 0 || o.Clients <= 0 || o.FloorTime <= 0 || o.History < 0 || o.Targets < 0 || o.AsOfWait < 0 || o.Flights < 0 ||
		(o.Workload != WorkloadDay && o.Workload != WorkloadClassic) {
		return ErrOptions
	}
	return nil
}
