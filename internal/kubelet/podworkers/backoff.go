package podworkers

import (
	"math/rand/v2"
	"time"
)

const (
	backoffJitter = 0.25 // ±25% on retry delays
	resyncJitter  = 0.10 // ±10% on the periodic resync
)

// backoff is the delay before retry number `failures` (>= 1): base doubling
// per consecutive failure, capped at maxDelay, then jittered.
func backoff(base, maxDelay time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxDelay; i++ {
		d *= 2
	}
	return jitter(min(d, maxDelay), backoffJitter)
}

// jitter returns d ± f·d, uniformly.
func jitter(d time.Duration, f float64) time.Duration {
	return d + time.Duration((rand.Float64()*2-1)*f*float64(d))
}
