// Package labctl is lab mode (docs/api.md, "Lab endpoints"): the settings
// a lab server runs with, the faults it can be armed with, and the control
// endpoints under /lab that reset it, show its state, move its clock and
// stream its events. Everything hangs off one Controller, so two lab
// servers can run in one process.
package labctl

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"idemlab/kit/stage"
)

// Settings holds the config in force. It is safe for concurrent use.
type Settings struct {
	mu  sync.RWMutex
	cfg stage.Config
}

// NewSettings checks cfg and returns settings holding it. It refuses a
// retention that is not longer than the client retry horizon: a key
// forgotten while its client still retries is a double transfer waiting.
func NewSettings(cfg stage.Config) (*Settings, error) {
	if err := check(cfg); err != nil {
		return nil, err
	}
	return &Settings{cfg: cfg}, nil
}

// Get returns the config in force.
func (s *Settings) Get() stage.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cfg
}

// set puts cfg in force: a config another replica stored (Replica.Sync),
// which it checked before.
func (s *Settings) set(cfg stage.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
}

func check(c stage.Config) error {
	switch {
	case c.CoreLatency < 0 || c.CoreLatency > time.Minute:
		return fmt.Errorf("core_latency must be between 0s and 1m, got %v", c.CoreLatency)
	case c.Lease <= 0:
		return fmt.Errorf("lease must be positive, got %v", c.Lease)
	case c.RetryHorizon <= 0:
		return fmt.Errorf("retry_horizon must be positive, got %v", c.RetryHorizon)
	case c.Retention <= c.RetryHorizon:
		return fmt.Errorf("retention (%v) must be longer than retry_horizon (%v): a key forgotten while clients still retry lets a retry execute twice", c.Retention, c.RetryHorizon)
	}
	return nil
}

// ConfigJSON is the wire form of a config: durations as Go duration strings.
type ConfigJSON struct {
	CoreLatency  string `json:"core_latency"`
	Retention    string `json:"retention"`
	Lease        string `json:"lease"`
	RetryHorizon string `json:"retry_horizon"`
}

// Wire renders a config for the API.
func Wire(c stage.Config) ConfigJSON {
	return ConfigJSON{
		CoreLatency: c.CoreLatency.String(), Retention: c.Retention.String(),
		Lease: c.Lease.String(), RetryHorizon: c.RetryHorizon.String(),
	}
}

// Update applies a POST /lab/config body: every member is optional. It
// returns the config now in force, or an error naming the bad member and
// changing nothing.
func (s *Settings) Update(body []byte) (stage.Config, error) {
	var in map[string]*string
	if err := json.Unmarshal(body, &in); err != nil {
		return stage.Config{}, fmt.Errorf("the body must be a JSON object of duration strings: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.cfg
	fields := map[string]*time.Duration{
		"core_latency": &next.CoreLatency, "retention": &next.Retention,
		"lease": &next.Lease, "retry_horizon": &next.RetryHorizon,
	}
	for name, v := range in {
		dst, ok := fields[name]
		if !ok {
			return stage.Config{}, fmt.Errorf("unknown member %q", name)
		}
		if v == nil {
			return stage.Config{}, fmt.Errorf("%s must be a duration such as \"250ms\" or \"24h\"", name)
		}
		d, err := time.ParseDuration(*v)
		if err != nil {
			return stage.Config{}, fmt.Errorf("%s: %v", name, err)
		}
		*dst = d
	}
	if err := check(next); err != nil {
		return stage.Config{}, err
	}
	s.cfg = next
	return next, nil
}
