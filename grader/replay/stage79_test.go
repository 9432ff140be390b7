package replay_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"idemlab/grader/dayplan"
	"idemlab/grader/replay"
	"idemlab/kit/stage"
	sol6 "idemlab/solutions/stage6"
	sol7 "idemlab/solutions/stage7"
)

// settingsDay is a short day of settings edits only.
func settingsDay(t *testing.T) *dayplan.Plan {
	t.Helper()
	p := dayplan.DefaultParams(5, 12)
	p.SettingsEditRate = 1
	plan, err := dayplan.Generate(5, p)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// settingsStage is a stage that serves settings.
type settingsStage interface {
	stage.Handlers
	stage.Settings
}

// blindWrites is stage 7 with the lesson's wrong pattern: a PUT that
// writes whatever version the settings are at, as if If-Match always
// named the current ETag.
type blindWrites struct{ settingsStage }

func (b blindWrites) PutSettings(w http.ResponseWriter, r *http.Request) {
	current := httptest.NewRecorder()
	b.GetSettings(current, r)
	r.Header.Set("If-Match", current.Header().Get("ETag"))
	b.settingsStage.PutSettings(w, r)
}

func newBlindWrites(ctx context.Context, env stage.Env) (stage.Handlers, error) {
	h, err := sol7.New(ctx, env)
	if err != nil {
		return nil, err
	}
	return blindWrites{h.(settingsStage)}, nil
}

// TestReplay_SettingsEdits: with If-Match compared, both clerks' changes
// stand (clerk B is told 412 and reapplies its change); a server that
// writes blind loses clerk A's daily limit in every edit; a server before
// stage 7 serves no settings, which is not a lost update. It catches a
// reconciliation that reads a lost update from the clerks' answers alone
// (they are all 200 on the blind server) or counts a 404 as one.
func TestReplay_SettingsEdits(t *testing.T) {
	plan := settingsDay(t)
	edits := len(plan.Ops)
	for _, tc := range []struct {
		name            string
		factory         stage.Factory
		lost, notServed int
	}{
		{"stage 7", sol7.New, 0, 0},
		{"blind writes", newBlindWrites, edits, 0},
		{"stage 6", sol6.New, 0, edits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := replay.InProcess(context.Background(), tc.factory, plan, nil, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rc := replay.ReconcileDay(run.Result)
			c := rc.Counts
			if rc.SettingsEdits != edits || c.LostUpdates != tc.lost || c.EditsNotServed != tc.notServed || c.UnexpectedStatus != 0 ||
				rc.Valid != (tc.lost+tc.notServed == 0) {
				t.Errorf("%d edits: lost %d, not served %d, unexpected %d, valid %v; want %d lost, %d not served\n%v",
					rc.SettingsEdits, c.LostUpdates, c.EditsNotServed, c.UnexpectedStatus, rc.Valid, tc.lost, tc.notServed, rc.Findings)
			}
		})
	}
}
