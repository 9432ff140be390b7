package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"idemlab/grader/conform"
)

type conformFlags struct {
	url     string
	profile string
	json    bool
	junit   string
	seed    uint64
	maxOps  int
	timeout time.Duration
}

func runConform(ctx context.Context, in *invocation) error {
	var f conformFlags
	in.StringVar(&f.url, "url", "", "the API's base URL, e.g. http://127.0.0.1:8080")
	in.StringVar(&f.profile, "profile", "", "the profile (JSON) that names the operation, its body, the principals and a witness (docs/conform.md)")
	in.BoolVar(&f.json, "json", false, "print the results as JSON instead of the report")
	in.StringVar(&f.junit, "junit", "", "also write the results as a JUnit XML file")
	in.Uint64Var(&f.seed, "seed", 0, "the run's seed: amounts and unique values; keys are fresh every run (default: a fresh seed, printed)")
	in.IntVar(&f.maxOps, "max-operations", 100, "send the operation at most this many times (each send could create something on a server that ignores keys)")
	in.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long a request may take; a slower answer is no answer, and lost-response waits this long for the answer it withholds")
	done, err := in.parse()
	if err == nil && !done && in.NArg() > 0 {
		// An argument stops the parse as a bad flag does: the flags
		// after it were never read.
		err = fmt.Errorf("arguments it does not take: %s (its settings are flags)", strings.Join(in.Args(), " "))
	}
	if err != nil {
		// The flags after what stopped the parse are still read for the
		// reports a CI job asked for.
		f.json, f.junit = reportFlags(in.FlagSet, in.args)
		return f.couldNotRun(in.stdout, "", nil, err)
	}
	if done {
		return nil
	}
	u, err := url.Parse(f.url)
	if f.url == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return f.couldNotRun(in.stdout, "", nil, errors.New("--url is the API's base URL, e.g. --url http://127.0.0.1:8080"))
	}
	if f.profile == "" {
		return f.couldNotRun(in.stdout, "", nil, errors.New("--profile names the profile file (docs/conform.md)"))
	}
	if f.maxOps < 1 || f.timeout <= 0 {
		return f.couldNotRun(in.stdout, "", nil, errors.New("--max-operations and --timeout must be positive"))
	}
	p, err := conform.Load(f.profile)
	if err != nil {
		return f.couldNotRun(in.stdout, "", nil, err)
	}
	if f.seed == 0 {
		f.seed = rand.Uint64()
	}
	base := strings.TrimSuffix(f.url, "/")
	// The report is wrapped to the terminal: its lines say what was sent
	// and what came back, and an 80-column terminal broke them mid-word.
	width := reportWidth(in.stdout)
	if !f.json {
		head := fmt.Sprintf("lab conform: %s at %s, seed %d (--seed %d repeats the draws)\n", p.Name, base, f.seed, f.seed)
		if err := wrapReport(in.stdout, head, width); err != nil {
			return err
		}
	}
	results, err := conform.Run(ctx, conform.Options{URL: base, Profile: p, Seed: f.seed, MaxOperations: f.maxOps, Timeout: f.timeout})
	if err != nil {
		return f.couldNotRun(in.stdout, p.Name, results, err)
	}
	if f.json {
		if err := conform.WriteJSON(in.stdout, p.Name, base, f.seed, results); err != nil {
			return err
		}
	} else {
		var report strings.Builder
		conform.WriteHuman(&report, p.Name, results)
		// The verdict, the last line, stays one line: a CI job reads it
		// with tail -1, and it is short.
		text := strings.TrimSuffix(report.String(), "\n")
		verdict := text[strings.LastIndex(text, "\n")+1:]
		if err := wrapReport(in.stdout, strings.TrimSuffix(text, verdict), width); err != nil {
			return err
		}
		fmt.Fprintln(in.stdout, verdict)
	}
	if f.junit != "" {
		if err := writeJUnitFile(f.junit, func(out *os.File) error { return conform.WriteJUnit(out, p.Name, results) }); err != nil {
			return cannotRun(err)
		}
	}
	s := conform.Summarize(results)
	switch v := s.Valid(); {
	case v == nil && s.Money == conform.MoneyUnobserved:
		return cannotRun(errors.New("could not observe the money: give the profile a witness (docs/conform.md)"))
	case v == nil:
		return cannotRun(fmt.Errorf("%d scenarios the verdict needs were not tried (a MUST, or money): unknown, never met; give what they need (docs/conform.md)", s.Undecided))
	case !*v && f.json:
		return &exitCode{code: 1, err: errors.New(s.Line())}
	case !*v:
		// The report's last line has said it.
		return &exitCode{code: 1}
	}
	return nil
}

// couldNotRun ends a run that could not be made, stopped by runErr after
// results (none if it stopped before sending anything), with exit status
// 2; the reports asked for are still written, valid null with the
// reason: a CI job finds them, and never reads nothing as a pass. name
// is the profile's, "" before it was read.
func (f *conformFlags) couldNotRun(stdout io.Writer, name string, results []conform.Result, runErr error) error {
	url := strings.TrimSuffix(f.url, "/")
	if f.json {
		if err := conform.WriteJSONCouldNotRun(stdout, name, url, f.seed, results, runErr); err != nil {
			return err
		}
	}
	if f.junit != "" {
		if err := writeJUnitFile(f.junit, func(out *os.File) error { return conform.WriteJUnitCouldNotRun(out, name, results, runErr) }); err != nil {
			return cannotRun(fmt.Errorf("%w; and --junit: %w", runErr, err))
		}
	}
	return cannotRun(runErr)
}

// reportFlags reads --json and --junit from args as fs would, past
// whatever stopped the parse (a flag fs does not define, its value
// perhaps, a bare argument, "--"): the reports asked for after it are
// still due. A flag fs defines takes its value as fs would, the next
// argument unless it has "="; a value that does not parse (--json=maybe)
// asks for nothing.
func reportFlags(fs *flag.FlagSet, args []string) (asJSON bool, junit string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		fl := fs.Lookup(name)
		if fl == nil {
			continue
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 == len(args) {
				return asJSON, junit
			}
			i++
			value = args[i]
		}
		switch name {
		case "json":
			if v, err := strconv.ParseBool(value); err == nil {
				asJSON = v
			}
		case "junit":
			junit = value
		}
	}
	return asJSON, junit
}

// writeJUnitFile creates the file at path and writes it with write.
func writeJUnitFile(path string, write func(*os.File) error) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
