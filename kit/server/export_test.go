package server

import "time"

// SetRelayInterval makes the relay wait d after a pass that settled
// nothing, until the function it returns puts RelayInterval back.
func SetRelayInterval(d time.Duration) (restore func()) {
	relayInterval = d
	return func() { relayInterval = RelayInterval }
}
