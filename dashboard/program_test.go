package dashboard

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"idemlab/kit/events"
	"idemlab/kit/labctl"
)

// golden runs the model as a program at 80×24 with 16 colors, sends it
// msgs, quits, and compares the final frame, in those 16 colors, with
// testdata/<test name>.golden (go test -update rewrites it).
func golden(t *testing.T, m Model, msgs ...tea.Msg) {
	t.Helper()
	goldenAt(t, 80, 24, m, msgs...)
}

// goldenAt is golden on a window width×height.
func goldenAt(t *testing.T, width, height int, m Model, msgs ...tea.Msg) {
	t.Helper()
	tm := teatest.NewTestModel(t, m,
		teatest.WithInitialTermSize(width, height),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.ANSI)))
	for _, msg := range msgs {
		tm.Send(msg)
	}
	// The program's own output shows the frame has been drawn.
	teatest.WaitFor(t, tm.Output(), func(out []byte) bool {
		return bytes.Contains(out, []byte("TRANSFERS")) || bytes.Contains(out, []byte("closes this page"))
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(press("q"))
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if final.width != width || final.height != height {
		t.Fatalf("the program saw %dx%d, want %dx%d", final.width, final.height, width, height)
	}
	var frame bytes.Buffer
	w := colorprofile.NewWriter(&frame, nil)
	w.Profile = colorprofile.ANSI
	w.WriteString(final.Render())
	teatest.RequireEqualOutput(t, frame.Bytes())
}

func TestProgram_DemoAt80x24(t *testing.T) {
	m := busyModel(t, 80, 24)
	golden(t, m)
}

func TestProgram_HelpPageAt80x24(t *testing.T) {
	m := busyModel(t, 80, 24)
	golden(t, m, press("?"))
}

// TestProgram_HelpPageScrollsAt60x18: on a small window the help page
// shows the key presses and the first lines that explain them, and says
// how to scroll to the rest; it showed one line and "…".
func TestProgram_HelpPageScrollsAt60x18(t *testing.T) {
	m := busyModel(t, 60, 18)
	goldenAt(t, 60, 18, m, press("?"), tea.KeyPressMsg{Code: tea.KeyDown})
}

func TestProgram_WatchAt80x24(t *testing.T) {
	m := NewWatch(t.Context(), "http://127.0.0.1:8080", t0)
	m.frozen = true
	golden(t, m,
		SideMsg{Side: 0, Title: "your server", URL: "http://127.0.0.1:8080", Status: "running"},
		EventsMsg{Side: 0, Received: t0, Events: flood(nil, 1, 6)},
		StateMsg{Side: 0, Polled: t0.Add(time.Second), State: labctl.State{}},
		tickMsg(t0))
}

// BenchmarkIngest feeds the model batches of events, as the watchers do,
// as fast as it takes them, then checks that every counter is exact and
// that what the model holds stayed bounded.
func BenchmarkIngest(b *testing.B) {
	const batch = 512
	m := demoModel(&fakeControls{})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ops, sent := 0, 0
	var scratch []events.Event
	b.ResetTimer()
	for sent < b.N {
		scratch = flood(scratch[:0], ops, batch/4)
		ops += batch / 4
		sent += len(scratch)
		next, _ := m.Update(EventsMsg{Side: Left, Epoch: 0, Received: t0, Events: scratch})
		m = next.(Model)
	}
	next, _ := m.Update(StateMsg{Side: Left, Epoch: 0, Polled: t0.Add(time.Second), State: labctl.State{Executions: map[string]int64{}}})
	m = next.(Model)
	b.StopTimer()
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "events/s")
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MB")
	requests, executions, doubles, lost := floodWant(ops)
	c := m.Side(Left).Counts
	if c.Requests != requests || c.Executions != executions || c.Doubles != doubles || c.Lost != lost {
		b.Fatalf("after %d events: requests %d executions %d doubles %d lost %d, want %d %d %d %d",
			sent, c.Requests, c.Executions, c.Doubles, c.Lost, requests, executions, doubles, lost)
	}
	if after.HeapInuse > before.HeapInuse+256<<20 {
		b.Fatalf("the heap grew by %d MB", (after.HeapInuse-before.HeapInuse)>>20)
	}
}
